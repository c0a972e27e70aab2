"""Writes the simulated-model fixtures of `hippocam eval` (docs/eval.md, "Fixtures").

The turns are filler with a few facts written as `KEY := VALUE` lines, and every question carries
an `!ask KEY` line, so that the simulated model (docs/sim.md) answers from what it can see. Run
from this directory: python3 gen.py
"""
import json

FILLER = [
    "The weather was grey all morning, so we stayed in and sorted the shelves in the hallway.",
    "I spent most of the week catching up on emails and tidying the garden beds before the rain.",
    "We tried the new bakery on the corner; the bread was good but the queue went round the block.",
    "Work has been busy with the quarterly report, and the printer jammed twice on Friday.",
    "My cousin called about the family picnic, and we argued for an hour about who brings the salad.",
    "I finished the mystery novel at last; the ending was clever but the middle dragged a little.",
    "The bus was late again, so I walked along the river and watched the rowers practise.",
    "We repainted the kitchen chairs, which took far longer than the tin promised.",
]
TURNS = 14  # per LoCoMo session


def filler(a, b):
    return FILLER[a % len(FILLER)] + " " + FILLER[b % len(FILLER)]


def locomo_session(speakers, facts, sid, n=TURNS):
    out = []
    for i in range(n):
        text = filler(sid * 3 + i, sid * 5 + i + 1)
        if i < len(facts):
            text += "\n" + facts[i]
        out.append({"speaker": speakers[i % 2], "dia_id": "D%d:%d" % (sid, i + 1), "text": text})
    return out


def locomo():
    dates = ["1:56 pm on 8 May, 2023", "10:37 am on 27 June, 2023", "8:56 pm on 20 July, 2023",
             "2:24 pm on 14 August, 2023", "1:18 pm on 2 September, 2023", "4:33 pm on 13 September, 2023",
             "9:05 am on 3 October, 2023", "7:40 pm on 22 October, 2023", "11:12 am on 9 November, 2023",
             "3:30 pm on 2 December, 2023"]
    facts = {1: ["caroline_color := blue"], 2: ["melanie_move := 7 May 2023"],
             9: ["caroline_hobby := painting"], 10: ["melanie_book := The Silent Orchard"]}
    conv = {"speaker_a": "Caroline", "speaker_b": "Melanie"}
    for s in range(1, 11):
        conv["session_%d_date_time" % s] = dates[s - 1]
        conv["session_%d" % s] = locomo_session(["Caroline", "Melanie"], facts.get(s, []), s)
    conv["session_4"][2]["img_url"] = ["https://example.com/lake.jpg"]
    conv["session_4"][2]["blip_caption"] = "a photo of a lake at sunset"
    qa = [
        {"question": "What is Caroline's favourite colour?\n!ask caroline_color", "answer": "blue", "evidence": ["D1:1"], "category": 4},
        {"question": "When did Melanie move house?\n!ask melanie_move", "answer": "7 May 2023", "evidence": ["D2:1"], "category": 2},
        {"question": "Which book did Melanie recommend?\n!ask melanie_book", "answer": "The Silent Orchard", "evidence": ["D10:1"], "category": 1},
        {"question": "What are Caroline's hobbies?\n!ask caroline_hobby", "answer": "painting and pottery", "evidence": ["D9:1"], "category": 3},
        {"question": "What is the name of Caroline's cat?\n!ask caroline_pet", "answer": "Luna", "evidence": [], "category": 4},
        {"question": "What is Melanie's favourite colour?\n!ask melanie_color", "adversarial_answer": "blue", "evidence": ["D1:1"], "category": 5},
    ]
    small = {"speaker_a": "Jon", "speaker_b": "Gina",
             "session_1_date_time": "9:00 am on 1 March, 2023", "session_2_date_time": "6:00 pm on 4 March, 2023",
             "session_1": locomo_session(["Jon", "Gina"], ["jon_shop := a dance studio"], 1, 4),
             "session_2": locomo_session(["Gina", "Jon"], [], 2, 4)}
    small_qa = [{"question": "What business did Jon open?\n!ask jon_shop", "answer": "a dance studio", "evidence": ["D1:1"], "category": 4}]
    return [{"sample_id": "conv-sim-1", "conversation": conv, "qa": qa},
            {"sample_id": "conv-sim-2", "conversation": small, "qa": small_qa}]


def lme_sessions(n, facts, seed, rounds=5):
    out = []
    for s in range(n):
        sess = []
        for i in range(rounds):
            user = filler(seed + s * 3 + i, seed + s + i * 2 + 1)
            turn = {"role": "user", "content": user}
            if i == 0 and s in facts:
                turn["content"] += "\n" + facts[s]
                turn["has_answer"] = True
            sess.append(turn)
            sess.append({"role": "assistant", "content": "That sounds like a full week. " + FILLER[(seed + s + i + 4) % len(FILLER)]})
        out.append(sess)
    return out


def longmemeval():
    def item(qid, qtype, question, answer, n, facts, seed):
        return {"question_id": qid, "question_type": qtype, "question": question, "answer": answer,
                "question_date": "2023/06/30 (Fri) 09:00",
                "haystack_dates": ["2023/05/%02d (Sat) %02d:21" % (i * 3 + 1, 9 + i % 10) for i in range(n)],
                "haystack_session_ids": ["%s_s%d" % (qid, i) for i in range(n)],
                "haystack_sessions": lme_sessions(n, facts, seed),
                "answer_session_ids": ["%s_s%d" % (qid, i) for i in facts]}
    return [
        item("sim_early", "single-session-user", "Where did I park my bike?\n!ask bike_spot", "behind the library", 12, {0: "bike_spot := behind the library"}, 1),
        item("sim_late", "multi-session", "What did I name my plant?\n!ask plant_name", "Fern Gully", 12, {11: "plant_name := Fern Gully"}, 2),
        item("sim_none_abs", "single-session-user", "What is my sister's name?\n!ask sister_name", "unknown", 3, {}, 3),
    ]


for name, data in [("locomo-sim.json", locomo()), ("longmemeval-sim.json", longmemeval())]:
    with open(name, "w") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")

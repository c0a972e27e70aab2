#!/usr/bin/env python3
"""Writes the bundled docs/sim.md scenarios. Deterministic: run it again and the files are the same.

Each scenario is a long agent session for the simulated model: nested intents (#open/#close),
tool calls (some parallel) with large results, facts that are later updated, `detail` facts that
consolidation leaves in the archive, and `!ask` questions whose expected answers are listed in
the matching .expected file (one per line, in order)."""
import json, random

def rows(rng, name, n):
    out = []
    for i in range(n):
        out.append(f"row {i:04d} | {name} | 2026-{rng.randint(1,12):02d}-{rng.randint(1,28):02d} | item-{rng.randint(1000,9999)} | qty {rng.randint(1,9)} | {rng.randint(100,99999)/100:.2f}")
    return "\n".join(out)

def code(rng, name, n):
    words = ["parse", "render", "index", "merge", "flush", "retry", "decode", "schedule", "lookup", "commit"]
    out = [f"// file {name}"]
    for i in range(n):
        w = rng.choice(words); v = rng.choice(words)
        out.append(f"func {w}{i}(x int) int {{ return {v}Helper(x + {rng.randint(1,99)}) }}")
    return "\n".join(out)

def u(c): return {"role": "user", "content": c}
def t(c): return {"role": "tool", "content": c}

def write(name, lines, answers):
    with open(name + ".jsonl", "w") as f:
        for l in lines:
            f.write(json.dumps(l, ensure_ascii=False) + "\n")
    with open(name + ".expected", "w") as f:
        for a in answers:
            f.write(a + "\n")

def invoice():
    rng = random.Random(1)
    L = []
    L.append(u("#open Prepare the invoice report | the report is sent\n#open Read the exports | both exports are read\nStart with the exports."))
    L.append(u("!call read_file {\"path\":\"exports/shop.csv\"}\n!call read_file {\"path\":\"exports/market.csv\"}"))
    L.append(t("revenue_shop := 1200\ndetail shop_owner := Dana\n" + rows(rng, "shop", 60)))
    L.append(t("revenue_market := 800\n" + rows(rng, "market", 50)))
    L.append(u("#close Read the exports\n#open Write the report | the report file exists\nrevenue_shop := 1250\n!say corrected the shop revenue"))
    for k in range(4):
        L.append(u(f"!call write_file {{\"path\":\"report/part{k}.md\"}}"))
        L.append(t(f"wrote part {k}\n" + rows(rng, f"part{k}", 45)))
    L.append(u("#close Write the report\n#close Prepare the invoice report\n!say done"))
    for k in range(6):
        L.append(u(f"#open Archive batch {k} | batch {k} is archived\n!call archive {{\"batch\":{k}}}"))
        L.append(t(f"batch_{k}_count := {100+k}\n" + rows(rng, f"batch{k}", 40)))
        L.append(u(f"#close Archive batch {k}\n!say batch {k} archived"))
    L.append(u("!ask revenue_shop"))
    L.append(u("!ask shop_owner"))
    L.append(u("!ask shop_manager"))
    L.append(u("!ask batch_2_count"))
    write("invoice", L, ["revenue_shop := 1250", "shop_owner := Dana", "shop_manager := unknown", "batch_2_count := 102"])

def refactor():
    rng = random.Random(2)
    L, A = [], []
    L.append(u("#open Migrate the billing service to the new ledger API | all billing tests pass on the new API, or the migration is shown impossible\nWe need billing on the ledger v2 API."))
    facts = {}
    for phase in range(5):
        L.append(u(f"#open Phase {phase}: port module group {phase} | group {phase} compiles and its tests pass\n#open Survey group {phase} | every file of group {phase} is read\n!say surveying group {phase}"))
        L.append(u(f"!call read_file {{\"path\":\"billing/g{phase}/a.go\"}}\n!call read_file {{\"path\":\"billing/g{phase}/b.go\"}}\n!call grep {{\"pattern\":\"ledger.V1\",\"dir\":\"billing/g{phase}\"}}"))
        facts[f"g{phase}_entry"] = f"billing/g{phase}/a.go:{rng.randint(10,400)}"
        L.append(t(f"g{phase}_entry := {facts[f'g{phase}_entry']}\n" + code(rng, f"billing/g{phase}/a.go", 70)))
        L.append(t(f"detail g{phase}_owner := team-{rng.choice(['atlas','birch','cobalt','delta'])}-{phase}\n" + code(rng, f"billing/g{phase}/b.go", 60)))
        L.append(t(f"g{phase}_v1_calls := {rng.randint(3,40)}\n" + "\n".join(f"billing/g{phase}/x{i}.go:{rng.randint(1,300)}: ledger.V1.Post(ctx, entry)" for i in range(25))))
        L.append(u(f"#close Survey group {phase}\n#open Rewrite group {phase} | the rewrite compiles\n!call edit {{\"path\":\"billing/g{phase}/a.go\"}}"))
        L.append(t("applied edit\n" + code(rng, f"diff g{phase}", 30)))
        calls = rng.randint(0, 2)
        L.append(u(f"g{phase}_v1_calls := {calls}\n!call run_tests {{\"pkg\":\"billing/g{phase}\"}}"))
        facts[f"g{phase}_v1_calls"] = str(calls)
        status = "pass" if phase != 2 else "fail: TestRefund expects cents"
        L.append(t(f"g{phase}_tests := {status}\n" + "\n".join(f"=== RUN Test{i}\n--- PASS: Test{i} (0.0{i%10}s)" for i in range(30))))
        if phase == 2:
            L.append(u("#open Fix TestRefund | TestRefund passes\n!call read_file {\"path\":\"billing/g2/refund_test.go\"}"))
            L.append(t("detail refund_unit := cents since v2\n" + code(rng, "refund_test.go", 40)))
            L.append(u("g2_tests := pass\n!call run_tests {\"pkg\":\"billing/g2\"}"))
            L.append(t("ok billing/g2 0.41s"))
            L.append(u("#close Fix TestRefund\n!say fixed the refund unit"))
        facts[f"g{phase}_tests"] = "pass"
        L.append(u(f"#close Rewrite group {phase}\n#close Phase {phase}: port module group {phase}\n!say group {phase} done"))
        if phase == 3:
            L.append(u("!ask g1_entry")); A.append(f"g1_entry := {facts['g1_entry']}")
    L.append(u("#close Migrate the billing service to the new ledger API\n!say migration complete"))
    for k in ["g0_entry", "g3_v1_calls", "g2_tests", "g4_owner", "refund_unit", "g0_owner", "ledger_region"]:
        L.append(u(f"!ask {k}"))
    A += [f"g0_entry := {facts['g0_entry']}", f"g3_v1_calls := {facts['g3_v1_calls']}", "g2_tests := pass"]
    # the owners are details: read back from the tool results that carry them
    owners = {}
    for l in L:
        for line in l["content"].split("\n"):
            if line.startswith("detail "):
                k, v = line[len("detail "):].split(" := ", 1)
                owners[k] = v
    A += [f"g4_owner := {owners['g4_owner']}", f"refund_unit := {owners['refund_unit']}", f"g0_owner := {owners['g0_owner']}", "ledger_region := unknown"]
    write("refactor", L, A)

def support():
    """A support agent working through 24 tickets over a long shift. Customer plans change from
    ticket to ticket (the latest value must win), each ticket leaves a serial as a detail that only
    the archive keeps, and the questions at the end reach back through several folds."""
    rng = random.Random(3)
    L, A = [], []
    plans = {}
    serials = {}
    customers = [f"cust{i}" for i in range(8)]
    L.append(u("#open Work the support queue for the shift | the queue is empty or the shift ends\nStart with ticket 0."))
    for k in range(24):
        c = customers[k % len(customers)]
        plan = rng.choice(["basic", "team", "business", "enterprise"]) + f"-{k}"
        plans[c] = plan
        serials[k] = f"SR-{rng.randint(10000, 99999)}"
        L.append(u(f"#open Resolve ticket {k} | ticket {k} is answered and closed\n#open Look up {c} | the account of {c} is read\n!call crm_lookup {{\"customer\":\"{c}\"}}\n!call ticket_history {{\"ticket\":{k}}}"))
        L.append(t(f"{c}_plan := {plan}\n" + rows(rng, c, 18)))
        L.append(t(f"detail ticket_{k}_serial := {serials[k]}\n" + rows(rng, f"t{k}", 16)))
        L.append(u(f"#close Look up {c}\n!say {c} is on {plan}"))
        if k % 3 == 0:
            L.append(u(f"!call send_reply {{\"ticket\":{k}}}"))
            L.append(t(f"reply_{k} := sent\n" + rows(rng, f"r{k}", 6)))
        L.append(u(f"#close Resolve ticket {k}\n!say ticket {k} closed"))
        L.append(u("!call queue_status {}"))
        queue = 40 - k
        L.append(t(f"queue_len := {queue}\n" + rows(rng, "queue", 14)))
        if k == 12:
            L.append(u("!ask cust1_plan")); A.append(f"cust1_plan := {plans['cust1']}")
    L.append(u("#close Work the support queue for the shift\n!say shift done"))
    for q in ["cust0_plan", "cust5_plan", "ticket_2_serial", "ticket_17_serial", "reply_9", "queue_len", "cust9_plan"]:
        L.append(u(f"!ask {q}"))
    A += [f"cust0_plan := {plans['cust0']}", f"cust5_plan := {plans['cust5']}", f"ticket_2_serial := {serials[2]}", f"ticket_17_serial := {serials[17]}", "reply_9 := sent", f"queue_len := {queue}", "cust9_plan := unknown"]
    write("support", L, A)

invoice()
refactor()
support()

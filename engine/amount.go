package engine

import (
	"regexp"
	"strconv"
	"strings"
)

// Numbers and amounts as the grounding check compares them (derive.go): a number is its digits
// without thousands separators, whether written so or in words; an amount is a number with a
// unit, whichever of the unit's common spellings it is written with.

// numberWords are the counts a text may spell out.
var numberWords = map[string]int{
	"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
	"fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
	"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
	"hundred": 100, "dozen": 12,
}

// ordinalWords are the ordinals a text may spell out.
var ordinalWords = map[string]int{
	"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
	"eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
	"fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
	"nineteenth": 19, "twentieth": 20, "thirtieth": 30,
}

// units maps each spelling of a unit to one name for it. Spellings that could mean several
// units ("m": metres, minutes or millions) are left out.
var units = map[string]string{
	"s": "second", "sec": "second", "secs": "second", "second": "second", "seconds": "second",
	"min": "minute", "mins": "minute", "minute": "minute", "minutes": "minute",
	"h": "hour", "hr": "hour", "hrs": "hour", "hour": "hour", "hours": "hour",
	"ms": "millisecond", "millisecond": "millisecond", "milliseconds": "millisecond",
	"day": "day", "days": "day", "wk": "week", "wks": "week", "week": "week", "weeks": "week",
	"km": "kilometre", "kilometer": "kilometre", "kilometers": "kilometre", "kilometre": "kilometre", "kilometres": "kilometre",
	"mi": "mile", "mile": "mile", "miles": "mile",
	"kg": "kilogram", "kilo": "kilogram", "kilos": "kilogram", "kilogram": "kilogram", "kilograms": "kilogram",
	"lb": "pound", "lbs": "pound", "pound": "pound", "pounds": "pound",
	"kb": "kilobyte", "kilobyte": "kilobyte", "kilobytes": "kilobyte",
	"mb": "megabyte", "megabyte": "megabyte", "megabytes": "megabyte",
	"gb": "gigabyte", "gigabyte": "gigabyte", "gigabytes": "gigabyte",
	"%": "percent", "percent": "percent", "per cent": "percent",
	"k": "thousand", "thousand": "thousand",
}

var (
	numberPattern  = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?`)
	amountPattern  = regexp.MustCompile(amountRegexp())
	numberWordRune = regexp.MustCompile(`\b(twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[- ](one|two|three|four|five|six|seven|eight|nine)\b|\b[a-z]+\b`)
)

// amountRegexp matches a number followed by one of the units' spellings, longest first.
func amountRegexp() string {
	names := make([]string, 0, len(units))
	for u := range units {
		names = append(names, regexp.QuoteMeta(u))
	}
	for i := 1; i < len(names); i++ { // longest first, so that "seconds" wins over "s"
		for j := i; j > 0 && len(names[j]) > len(names[j-1]); j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
	return `(?:^|[^\w.,])(\d[\d,]*(?:\.\d+)?)\s?(` + strings.Join(names, "|") + `)(?:$|[^\w])`
}

// plainNumber drops the thousands separators of a number.
func plainNumber(s string) string { return strings.ReplaceAll(s, ",", "") }

// amounts returns the amounts text (lower-cased) writes, as "NUMBER UNIT", with where each is.
func amounts(text string) (keys []string, at [][2]int) {
	for _, m := range amountPattern.FindAllStringSubmatchIndex(text, -1) {
		keys = append(keys, plainNumber(text[m[2]:m[3]])+" "+units[text[m[4]:m[5]]])
		at = append(at, [2]int{m[2], m[5]})
	}
	return keys, at
}

// numbersOf returns the numbers text (lower-cased) writes, in digits or in words, as plain
// numbers, and each spelled ordinal also with its suffix ("3rd").
func numbersOf(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range numberPattern.FindAllStringIndex(text, -1) {
		// Only a number standing alone: not the digits of "30s", "v2" or "ord_4471".
		if m[0] > 0 && (wordRune(lastRune(text[:m[0]])) || text[m[0]-1] == '.') ||
			m[1] < len(text) && wordRune(firstRune(text[m[1]:])) {
			continue
		}
		out[plainNumber(strings.TrimRight(text[m[0]:m[1]], ","))] = true
	}
	for _, w := range numberWordRune.FindAllString(text, -1) {
		if tens, unit, ok := strings.Cut(strings.ReplaceAll(w, "-", " "), " "); ok {
			out[strconv.Itoa(numberWords[tens]+numberWords[unit])] = true
			continue
		}
		if n, ok := numberWords[w]; ok {
			out[strconv.Itoa(n)] = true
		}
		if n, ok := ordinalWords[w]; ok {
			out[strconv.Itoa(n)] = true
			out[strconv.Itoa(n)+ordinalSuffix(n)] = true
		}
	}
	return out
}

// ordinalSuffix is the suffix of n written as an ordinal ("st", "nd", "rd", "th").
func ordinalSuffix(n int) string { return strings.TrimPrefix(ordinal(n), strconv.Itoa(n)) }

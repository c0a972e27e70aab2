package engine

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Derivations the grounding check accepts (plausible.go). A careful model does not copy every
// particular as written: it resolves "yesterday" in a log dated 8 May 2023 to 7 May 2023, writes
// "30 seconds" for "30s", 4750 for "4,750" and 3 for "three". Such values follow from what the
// model was shown, so they are grounded; a name, place, sum or date found nowhere and derivable
// from nothing is still refused.
//
//   - dates: every date the messages in view or the instruction write in full (day, month and
//     year, in the common written forms or ISO) is an anchor; each relative expression present
//     ("yesterday", "today", "tomorrow", a weekday's name, "last weekend", "last/this/next
//     week", "month" or "year", "N days/weeks/months/years ago", "in N days") derives the dates
//     it can mean from the anchors of its own message, or of the latest earlier message that
//     has some. A date of the memory is grounded when it is among them at
//     its own precision: a full date is a derived day, a month and year a month holding one, a
//     lone year one of their years. A full date derivable from nothing is refused as a whole,
//     even when its numbers appear apart.
//   - amounts: a number with a unit ("30s", "30 sec", "30 seconds") matches the same number
//     with the same unit written any of those ways.
//   - numbers: "4,750" and "4750" are the same number, and a number written in words ("three",
//     "twenty-five", "third") stands for its digits.

// calendarDay is a date without a time.
type calendarDay struct {
	y int
	m time.Month
	d int
}

func (c calendarDay) time() time.Time { return time.Date(c.y, c.m, c.d, 12, 0, 0, 0, time.UTC) }

func dayOf(t time.Time) calendarDay { return calendarDay{t.Year(), t.Month(), t.Day()} }

// derivedDates are the dates the messages in view state or let a model resolve.
type derivedDates struct {
	days   map[calendarDay]bool
	months map[calendarDay]bool // d = 0
	years  map[int]bool
	// dayMonths are the day-month pairs written without a year (y = 0).
	dayMonths map[calendarDay]bool
}

const monthPattern = `(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?`

var (
	dayMonthYear = regexp.MustCompile(`\b(\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?\s+` + monthPattern + `(?:,?\s+(\d{4}))?\b`)
	monthDayYear = regexp.MustCompile(`\b` + monthPattern + `\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4})\b)?`)
	monthYear    = regexp.MustCompile(`\b` + monthPattern + `,?\s+(\d{4})\b`)
	isoDate      = regexp.MustCompile(`\b(\d{4})-(\d{2})-(\d{2})\b`)
	loneYear     = regexp.MustCompile(`\b(1[6-9]\d\d|2\d\d\d)\b`)
	agoPattern   = regexp.MustCompile(`\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|couple of|a few|few)\s+(day|week|month|year)s?\s+(ago|earlier|before|later|from now)\b`)
	inPattern    = regexp.MustCompile(`\bin\s+(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few)\s+(day|week|month|year)s?\b`)
)

// wholeWords match the words deriveDates looks for as whole words.
var wholeWords = func() map[string]*regexp.Regexp {
	m := map[string]*regexp.Regexp{}
	for _, w := range []string{"yesterday", "tomorrow", "weekend", "sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"} {
		m[w] = regexp.MustCompile(`\b` + w + `\b`)
	}
	return m
}()

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

func monthNumber(name string) time.Month {
	name = strings.TrimSuffix(name, ".")
	for m := time.January; m <= time.December; m++ {
		if strings.HasPrefix(strings.ToLower(m.String()), name) && len(name) >= 3 {
			return m
		}
	}
	return 0
}

// validDay returns the day y-m-d when it exists.
func validDay(y int, m time.Month, d int) (calendarDay, bool) {
	if m == 0 || d < 1 || d > 31 {
		return calendarDay{}, false
	}
	t := time.Date(y, m, d, 12, 0, 0, 0, time.UTC)
	return dayOf(t), t.Month() == m
}

// dateMention is a date a text writes: its place in the text and its value at its precision.
type dateMention struct {
	lo, hi int
	day    calendarDay // d = 0: a month; m = 0: a year; y = 0: a day and month without a year
}

// dateMentions finds the dates text (lower-cased) writes, longest forms first, without overlaps.
func dateMentions(text string) []dateMention {
	var out []dateMention
	taken := make([]bool, len(text)+1)
	add := func(lo, hi int, c calendarDay) {
		for i := lo; i < hi; i++ {
			if taken[i] {
				return
			}
		}
		for i := lo; i < hi; i++ {
			taken[i] = true
		}
		out = append(out, dateMention{lo, hi, c})
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	for _, m := range isoDate.FindAllStringSubmatchIndex(text, -1) {
		if c, ok := validDay(num(text[m[2]:m[3]]), time.Month(num(text[m[4]:m[5]])), num(text[m[6]:m[7]])); ok {
			add(m[0], m[1], c)
		}
	}
	// "8 May 2023" and "May 8, 2023" differ only in which group holds the day and the month;
	// the year may be left out.
	for _, f := range []struct {
		re         *regexp.Regexp
		day, month int // submatch group numbers
	}{{dayMonthYear, 1, 2}, {monthDayYear, 2, 1}} {
		for _, m := range f.re.FindAllStringSubmatchIndex(text, -1) {
			y := 0
			if m[6] >= 0 {
				y = num(text[m[6]:m[7]])
			}
			day, month := text[m[2*f.day]:m[2*f.day+1]], text[m[2*f.month]:m[2*f.month+1]]
			if c, ok := validDay(max(y, 2000), monthNumber(month), num(day)); ok {
				c.y = y
				add(m[0], m[1], c)
			}
		}
	}
	for _, m := range monthYear.FindAllStringSubmatchIndex(text, -1) {
		if mo := monthNumber(text[m[2]:m[3]]); mo != 0 {
			add(m[0], m[1], calendarDay{y: num(text[m[4]:m[5]]), m: mo})
		}
	}
	for _, m := range loneYear.FindAllStringSubmatchIndex(text, -1) {
		add(m[0], m[1], calendarDay{y: num(text[m[2]:m[3]])})
	}
	return out
}

// countWord reads the count of a relative expression: digits, a number word, "a", "a couple
// of" (2) or "a few" (2 to 5).
func countWord(s string) []int {
	switch s {
	case "a", "an":
		return []int{1}
	case "a couple of", "couple of":
		return []int{2}
	case "a few", "few":
		return []int{2, 3, 4, 5}
	}
	if n, err := strconv.Atoi(s); err == nil {
		return []int{n}
	}
	if n, ok := numberWords[s]; ok {
		return []int{n}
	}
	return nil
}

// deriveDates collects the dates texts (the messages in view and the instruction, in order,
// lower-cased) state, and every date their relative expressions can mean: a relative expression
// is resolved against the dates its own message states (a log's date, say), or those of the
// latest message before it that states some.
func deriveDates(texts []string) derivedDates {
	dd := derivedDates{days: map[calendarDay]bool{}, months: map[calendarDay]bool{}, years: map[int]bool{}, dayMonths: map[calendarDay]bool{}}
	var anchors []time.Time
	for _, t := range texts {
		anchors = dd.add(t, anchors)
	}
	for c := range dd.days {
		dd.months[calendarDay{y: c.y, m: c.m}] = true
	}
	for c := range dd.months {
		dd.years[c.y] = true
	}
	return dd
}

// add collects the dates source (one message's text, lower-cased) states, and those its relative
// expressions mean from each of its own full dates, or, when it states none, from carried (the
// dates of the latest earlier message that stated some). It returns the dates a later message
// without dates of its own resolves against.
func (dd *derivedDates) add(source string, carried []time.Time) []time.Time {
	var anchors []time.Time
	for _, m := range dateMentions(source) {
		switch c := m.day; {
		case c.d != 0 && c.y != 0:
			anchors = append(anchors, c.time())
			dd.days[c] = true
		case c.d != 0:
			dd.dayMonths[c] = true
		case c.m != 0:
			dd.months[c] = true
		default:
			dd.years[c.y] = true
		}
	}
	var offsets []int                   // days from an anchor
	var monthOffsets, yearOffsets []int // months and years from an anchor
	has := func(s string) bool { return strings.Contains(source, s) }
	word := func(w string) bool { return wholeWords[w].MatchString(source) }
	span := func(lo, hi int) {
		for d := lo; d <= hi; d++ {
			offsets = append(offsets, d)
		}
	}
	offsets = append(offsets, 0)
	if word("yesterday") || has("last night") {
		offsets = append(offsets, -1)
	}
	if has("day before yesterday") {
		offsets = append(offsets, -2)
	}
	if word("tomorrow") {
		offsets = append(offsets, 1)
	}
	if has("day after tomorrow") {
		offsets = append(offsets, 2)
	}
	if has("last week") || has("past week") || has("week ago") {
		span(-13, -1)
	}
	if has("this week") {
		span(-6, 6)
	}
	if has("next week") || has("coming week") {
		span(1, 13)
	}
	if has("last month") || has("month ago") || has("past month") {
		monthOffsets = append(monthOffsets, -1)
	}
	if has("this month") {
		monthOffsets = append(monthOffsets, 0)
	}
	if has("next month") {
		monthOffsets = append(monthOffsets, 1)
	}
	if has("last year") || has("year ago") || has("past year") {
		yearOffsets = append(yearOffsets, -1)
	}
	if has("this year") {
		yearOffsets = append(yearOffsets, 0)
	}
	if has("next year") {
		yearOffsets = append(yearOffsets, 1)
	}
	for _, m := range agoPattern.FindAllStringSubmatch(source, -1) {
		sign := -1
		if m[3] == "later" || m[3] == "from now" {
			sign = 1
		}
		for _, n := range countWord(m[1]) {
			switch m[2] {
			case "day":
				offsets = append(offsets, sign*n)
			case "week":
				offsets = append(offsets, sign*7*n)
			case "month":
				monthOffsets = append(monthOffsets, sign*n)
			case "year":
				yearOffsets = append(yearOffsets, sign*n)
			}
		}
	}
	for _, m := range inPattern.FindAllStringSubmatch(source, -1) {
		for _, n := range countWord(m[1]) {
			switch m[2] {
			case "day":
				offsets = append(offsets, n)
			case "week":
				offsets = append(offsets, 7*n)
			case "month":
				monthOffsets = append(monthOffsets, n)
			case "year":
				yearOffsets = append(yearOffsets, n)
			}
		}
	}
	var named []time.Weekday
	for name, wd := range weekdays {
		if word(name) {
			named = append(named, wd)
		}
	}
	if word("weekend") {
		named = append(named, time.Saturday, time.Sunday)
	}
	if len(anchors) == 0 {
		anchors = carried
	}
	for _, a := range anchors {
		for _, o := range offsets {
			dd.days[dayOf(a.AddDate(0, 0, o))] = true
		}
		for o := -13; o <= 13; o++ {
			t := a.AddDate(0, 0, o)
			for _, wd := range named {
				if t.Weekday() == wd {
					dd.days[dayOf(t)] = true
				}
			}
		}
		for _, o := range monthOffsets {
			t := time.Date(a.Year(), a.Month()+time.Month(o), 1, 12, 0, 0, 0, time.UTC)
			dd.months[calendarDay{y: t.Year(), m: t.Month()}] = true
		}
		for _, o := range yearOffsets {
			dd.years[a.Year()+o] = true
		}
	}
	return anchors
}

// holds reports whether the date c, at its precision, is among the derived dates.
func (dd *derivedDates) holds(c calendarDay) bool {
	switch {
	case c.y == 0:
		if dd.dayMonths[c] {
			return true
		}
		for k := range dd.days {
			if k.m == c.m && k.d == c.d {
				return true
			}
		}
		return false
	case c.d != 0:
		return dd.days[c] || (dd.dayMonths[calendarDay{m: c.m, d: c.d}] && dd.years[c.y])
	case c.m != 0:
		return dd.months[c]
	}
	return dd.years[c.y]
}

// String writes the date at its precision, as a rejection quotes it.
func (c calendarDay) String() string {
	switch {
	case c.y == 0:
		return fmt.Sprintf("%d %s", c.d, c.m)
	case c.d != 0:
		return fmt.Sprintf("%d %s %d", c.d, c.m, c.y)
	case c.m != 0:
		return fmt.Sprintf("%s %d", c.m, c.y)
	}
	return strconv.Itoa(c.y)
}

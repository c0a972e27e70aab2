package wire

// chunks is an append-only list kept in chunks of chunkLen. A chunk is never changed once full,
// so that the list of a later request shares the full chunks of what it has in common with an
// earlier one instead of copying them.
type chunks[T any] struct {
	all [][]T
	n   int
}

// chunkLen is the length of every chunk but the last.
const chunkLen = 256

func (c *chunks[T]) at(i int) *T { return &c.all[i/chunkLen][i%chunkLen] }

// add appends v, in a new chunk when the last is full.
func (c *chunks[T]) add(v T) {
	if c.n%chunkLen == 0 {
		c.all = append(c.all, make([]T, 0, chunkLen))
	}
	last := &c.all[len(c.all)-1]
	*last = append(*last, v)
	c.n++
}

// share starts the empty list c with the first n elements of base: base's full chunks shared,
// the rest copied.
func (c *chunks[T]) share(base *chunks[T], n int) {
	full := n / chunkLen
	c.all = append(make([][]T, 0, full+1), base.all[:full]...)
	c.n = full * chunkLen
	for i := c.n; i < n; i++ {
		c.add(*base.at(i))
	}
}

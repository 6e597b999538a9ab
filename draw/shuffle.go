package draw

import "slices"

// SplitMix64 is the generator of the draw: Steele, Lea and Flood's
// SplitMix64 (2014), in the form Vigna published as splitmix64.c. Its state
// is one 64-bit word, the seed; every output adds the golden-gamma constant
// to the state and mixes the result. All arithmetic wraps modulo 2^64.
type SplitMix64 struct {
	state uint64
}

// NewSplitMix64 returns the generator with its state set to seed.
func NewSplitMix64(seed uint64) *SplitMix64 { return &SplitMix64{state: seed} }

// Next returns the next 64-bit output.
func (g *SplitMix64) Next() uint64 {
	g.state += 0x9e3779b97f4a7c15
	z := g.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Below returns a uniform integer in [0, n) for n >= 1, by rejection: with
// t = (2^64 - n) mod n, outputs x < t are thrown away and the first x >= t
// gives x mod n. The accepted outputs cover a whole multiple of n, so no
// value is favoured. n = 1 still consumes one output (t is 0, so the first
// is accepted).
func (g *SplitMix64) Below(n uint64) uint64 {
	if n == 0 {
		panic("draw: Below(0)")
	}
	t := -n % n
	for {
		if x := g.Next(); x >= t {
			return x % n
		}
	}
}

// Shuffle returns the ids sorted bytewise and then permuted by the draw's
// shuffle: Fisher–Yates in Durstenfeld's form, from the last index down,
//
//	for i = len-1 down to 1: j = g.Below(i+1); swap a[i], a[j]
//
// with g a SplitMix64 seeded with seed. The input is not modified. Sorting
// first makes the result independent of the order the ids were read in.
func Shuffle(ids []string, seed uint64) []string {
	a := slices.Clone(ids)
	slices.Sort(a) // Go compares strings bytewise
	g := NewSplitMix64(seed)
	for i := len(a) - 1; i >= 1; i-- {
		j := g.Below(uint64(i) + 1)
		a[i], a[j] = a[j], a[i]
	}
	return a
}

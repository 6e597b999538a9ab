package modelgw

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"benchd.dev/client/apitype"
)

// DefaultPricesFile is the price table benchd reads when --prices is not
// given and the file exists.
const DefaultPricesFile = "/etc/benchd/prices.toml"

// Price is what one model costs, in US dollars per million tokens.
// CachedInput and CacheWrite default to Input when left out.
type Price struct {
	Input       float64  `toml:"input"`
	CachedInput *float64 `toml:"cached_input"`
	CacheWrite  *float64 `toml:"cache_write"`
	Output      float64  `toml:"output"`
}

// Prices is a price table: a price per model name. A name ending in *
// prices every model it is a prefix of (the longest such prefix wins);
// an exact name wins over any prefix.
type Prices struct {
	exact    map[string]Price
	prefixes []string // longest first
	byPrefix map[string]Price
}

// LoadPrices reads a price table (see the package doc's "Prices"). An
// error wraps ErrInvalid and names the file and the line.
func LoadPrices(file string) (*Prices, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("unable to read the price table: %w", err)
	}
	p, err := ParsePrices(b)
	if err != nil {
		return nil, fmt.Errorf("%s%w", file, err)
	}
	return p, nil
}

// ParsePrices reads a price table's text. An error names the line
// (":LINE: ...") and wraps ErrInvalid.
func ParsePrices(b []byte) (*Prices, error) {
	var doc struct {
		Models map[string]Price `toml:"models"`
	}
	md, err := toml.Decode(string(b), &doc)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf(":%d: %s: %w", pe.Position.Line, pe.Message, ErrInvalid)
		}
		// A value of the wrong type: the decoder names the key.
		return nil, fmt.Errorf(":%d: %v: %w", lineOf(b, keyInError(err.Error())), err, ErrInvalid)
	}
	if un := md.Undecoded(); len(un) > 0 {
		k := un[0]
		return nil, fmt.Errorf(":%d: unknown key %s (want [models.\"NAME\"] with input, cached_input, cache_write, output): %w",
			lineOf(b, k[len(k)-1]), k, ErrInvalid)
	}
	p := &Prices{exact: map[string]Price{}, byPrefix: map[string]Price{}}
	names := make([]string, 0, len(doc.Models))
	for name := range doc.Models {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		pr := doc.Models[name]
		line := lineOf(b, name)
		if name == "" || name == "*" {
			return nil, fmt.Errorf(":%d: model %q: a name (or a prefix and *) is needed: %w", line, name, ErrInvalid)
		}
		if !md.IsDefined("models", name, "input") || !md.IsDefined("models", name, "output") {
			return nil, fmt.Errorf(":%d: model %q: input and output prices are needed: %w", line, name, ErrInvalid)
		}
		if pr.CachedInput == nil {
			pr.CachedInput = &pr.Input
		}
		if pr.CacheWrite == nil {
			pr.CacheWrite = &pr.Input
		}
		for _, v := range []float64{pr.Input, *pr.CachedInput, *pr.CacheWrite, pr.Output} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf(":%d: model %q: a price must be a number of dollars, 0 or more: %w", line, name, ErrInvalid)
			}
		}
		if pre, ok := strings.CutSuffix(name, "*"); ok {
			p.byPrefix[pre] = pr
			p.prefixes = append(p.prefixes, pre)
		} else {
			p.exact[name] = pr
		}
	}
	sort.SliceStable(p.prefixes, func(i, j int) bool { return len(p.prefixes[i]) > len(p.prefixes[j]) })
	return p, nil
}

// keyInError finds the quoted key name in a decode error's text.
func keyInError(s string) string {
	if i := strings.Index(s, "models."); i >= 0 {
		rest := s[i+len("models."):]
		rest = strings.Trim(rest, `"`)
		if j := strings.IndexAny(rest, `".' `); j > 0 {
			return rest[:j]
		}
	}
	return ""
}

// lineOf is the first line (from 1) that holds s, 0 when none does: the
// decoder gives no positions for keys.
func lineOf(b []byte, s string) int {
	if s == "" {
		return 0
	}
	for i, l := range bytes.Split(b, []byte("\n")) {
		if bytes.Contains(l, []byte(s)) {
			return i + 1
		}
	}
	return 0
}

// Lookup gives the price of model.
func (p *Prices) Lookup(model string) (Price, bool) {
	if p == nil || model == "" {
		return Price{}, false
	}
	if pr, ok := p.exact[model]; ok {
		return pr, true
	}
	for _, pre := range p.prefixes {
		if strings.HasPrefix(model, pre) {
			return p.byPrefix[pre], true
		}
	}
	return Price{}, false
}

// Cost is what u costs at pr, in dollars: input tokens neither read from
// nor written to the cache at Input, the cache's reads at CachedInput,
// its writes at CacheWrite, output (reasoning included) at Output.
func (pr Price) Cost(u apitype.TokenUsage) float64 {
	plain := max(u.InputTokens-u.CachedInputTokens-u.CacheWriteTokens, 0)
	return (float64(plain)*pr.Input + float64(u.CachedInputTokens)*deref(pr.CachedInput, pr.Input) +
		float64(u.CacheWriteTokens)*deref(pr.CacheWrite, pr.Input) + float64(u.OutputTokens)*pr.Output) / 1e6
}

func deref(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

// Usage sums calls (apitype.ModelUsageOf) with their hash and, when
// prices is not nil, their cost: each call with usage whose model the
// table lists adds to CostUSD, each one it does not list counts in
// Unpriced. Without calls it is nil.
func Usage(calls []apitype.ModelCall, prices *Prices) *apitype.ModelUsage {
	if len(calls) == 0 {
		return nil
	}
	u := apitype.ModelUsageOf(calls)
	u.CallsSHA256 = apitype.ModelCallsSHA256(calls)
	if prices == nil {
		return &u
	}
	cost := 0.0
	for _, c := range calls {
		if c.Usage == nil {
			continue
		}
		if pr, ok := prices.Lookup(c.Model); ok {
			cost += pr.Cost(*c.Usage)
		} else {
			u.Unpriced++
		}
	}
	u.CostUSD = &cost
	return &u
}

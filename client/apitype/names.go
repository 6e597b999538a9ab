package apitype

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// A path of a Change is a file name an agent chose: any bytes but NUL,
// not always UTF-8, which is all a JSON string holds. A path that is
// not UTF-8 goes under its key with "_b64" appended ("path_b64",
// "from_b64"), the standard base64 of its bytes, in the place of its
// key: the form the journal gives such names (fsmon/journal's package
// doc, "Names that are not UTF-8"), which this leaf package cannot
// import. A path that is UTF-8 is written as it always was.

// changeJSON is a Change in JSON, keys in the order of the struct.
type changeJSON struct {
	Kind    string  `json:"kind"`
	Path    *string `json:"path,omitempty"`
	PathB64 string  `json:"path_b64,omitempty"`
	From    *string `json:"from,omitempty"`
	FromB64 string  `json:"from_b64,omitempty"`
	Type    string  `json:"type"`
	SHA256  string  `json:"sha256,omitempty"`
}

var rawNames = base64.StdEncoding.Strict()

// MarshalJSON writes the change with its paths in their form.
func (c Change) MarshalJSON() ([]byte, error) {
	j := changeJSON{Kind: c.Kind, Type: c.Type, SHA256: c.SHA256}
	j.Path, j.PathB64 = nameOut(c.Path)
	if c.From != "" {
		j.From, j.FromB64 = nameOut(c.From)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a change, its paths in either form.
func (c *Change) UnmarshalJSON(b []byte) error {
	var j changeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	p, err := nameIn("path", j.Path, j.PathB64)
	if err != nil {
		return err
	}
	from, err := nameIn("from", j.From, j.FromB64)
	if err != nil {
		return err
	}
	*c = Change{Kind: j.Kind, Path: p, From: from, Type: j.Type, SHA256: j.SHA256}
	return nil
}

// nameOut returns name s as text (nil when it is not UTF-8) or as the
// base64 of its bytes ("" when it is UTF-8).
func nameOut(s string) (text *string, raw string) {
	if utf8.ValidString(s) {
		return &s, ""
	}
	return nil, rawNames.EncodeToString([]byte(s))
}

// nameIn is the inverse of nameOut for the name under key.
func nameIn(key string, text *string, raw string) (string, error) {
	if raw == "" {
		if text == nil {
			return "", nil
		}
		return *text, nil
	}
	if text != nil && *text != "" {
		return "", fmt.Errorf("both %s and %s_b64", key, key)
	}
	b, err := rawNames.DecodeString(raw)
	if err != nil {
		return "", fmt.Errorf("%s_b64: %w", key, err)
	}
	if utf8.Valid(b) {
		return "", fmt.Errorf("%s_b64 holds UTF-8, which belongs in %s", key, key)
	}
	return string(b), nil
}

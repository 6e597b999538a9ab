package journal

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"unicode/utf8"
)

// A name is any byte string Linux allows in a path (every byte but NUL,
// and '/' between components), a link target or a command name: what an
// agent chooses, not always UTF-8. JSON strings hold only UTF-8
// (encoding/json replaces each invalid byte by U+FFFD), so a name that
// is not UTF-8 is written under the key KEY_b64, the standard base64 of
// its bytes, in place of KEY (see the package doc, "Names that are not
// UTF-8"). A name that is UTF-8 is written as it always was, so
// journals, manifests and changesets written before this form existed
// read as they did.

// rawSuffix is what a key gets when its name is not UTF-8.
const rawSuffix = "_b64"

var rawEncoding = base64.StdEncoding.Strict()

// nameOut returns the two forms of name s for a JSON object: text, the
// name itself (nil when it is not UTF-8), or raw, its base64 ("" when
// it is UTF-8).
func nameOut(s string) (text *string, raw string) {
	if utf8.ValidString(s) {
		return &s, ""
	}
	return nil, rawEncoding.EncodeToString([]byte(s))
}

// nameIn is the inverse of nameOut for the name under key: text or raw,
// at most one of them, raw only for a name that is not UTF-8 (each name
// has one encoding).
func nameIn(key string, text *string, raw string) (string, error) {
	if raw == "" {
		if text == nil {
			return "", nil
		}
		return *text, nil
	}
	if text != nil && *text != "" {
		return "", fmt.Errorf("both %s and %s%s", key, key, rawSuffix)
	}
	b, err := rawEncoding.DecodeString(raw)
	if err != nil {
		return "", fmt.Errorf("%s%s: %w", key, rawSuffix, err)
	}
	if utf8.Valid(b) {
		return "", fmt.Errorf("%s%s holds UTF-8, which belongs in %s", key, rawSuffix, key)
	}
	return string(b), nil
}

// appendNameField appends the field of name s under key (`,"key":`
// without the comma and colon: "path"), nothing for an empty name.
func appendNameField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	text, raw := nameOut(s)
	b = append(b, `,"`...)
	b = append(b, key...)
	if text != nil {
		b = append(b, `":`...)
		return appendJSONString(b, s)
	}
	b = append(b, rawSuffix...)
	b = append(b, `":"`...)
	b = append(b, raw...)
	return append(b, '"')
}

// strictUnmarshal decodes b into v, refusing unknown keys and trailing
// data.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the object")
	}
	return nil
}

// recordJSON is a Record as encoding/json reads it: its names in either
// form.
type recordJSON struct {
	*plainRecord
	PathB64   string `json:"path_b64"`
	Path2B64  string `json:"path2_b64"`
	TargetB64 string `json:"target_b64"`
	CommB64   string `json:"comm_b64"`
	NameB64   string `json:"name_b64"`
}

type plainRecord Record

// MarshalJSON returns the record's line without its newline: its
// canonical encoding, hash included, names that are not UTF-8 in their
// _b64 form.
func (r Record) MarshalJSON() ([]byte, error) {
	if err := checkEncodable(r); err != nil {
		return nil, err
	}
	b := r.appendCanonical(nil)
	b = append(b[:len(b)-2], r.Hash...)
	return append(b, `"}`...), nil
}

// UnmarshalJSON reads a record in any key order, a name in either of
// its forms (Reader, unlike this, accepts only the canonical line).
func (r *Record) UnmarshalJSON(b []byte) error {
	var rec Record
	j := recordJSON{plainRecord: (*plainRecord)(&rec)}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	for _, f := range []struct {
		key string
		dst *string
		raw string
	}{
		{"path", &rec.Path, j.PathB64},
		{"path2", &rec.Path2, j.Path2B64},
		{"target", &rec.Target, j.TargetB64},
		{"comm", &rec.Comm, j.CommB64},
		{"name", &rec.Name, j.NameB64},
	} {
		s, err := nameIn(f.key, f.dst, f.raw)
		if err != nil {
			return err
		}
		*f.dst = s
	}
	*r = rec
	return nil
}

// entryJSON is an Entry in JSON: the same keys, in the same order, as
// the Entry struct had before names that are not UTF-8 got their form.
type entryJSON struct {
	Path      *string `json:"path,omitempty"`
	PathB64   string  `json:"path_b64,omitempty"`
	Type      string  `json:"type"`
	Mode      uint32  `json:"mode"`
	Size      int64   `json:"size,omitempty"`
	SHA256    string  `json:"sha256,omitempty"`
	Target    *string `json:"target,omitempty"`
	TargetB64 string  `json:"target_b64,omitempty"`
}

// MarshalJSON writes the entry with its path and target in their form.
func (e Entry) MarshalJSON() ([]byte, error) {
	j := entryJSON{Type: e.Type, Mode: uint32(e.Mode), Size: e.Size, SHA256: e.SHA256}
	j.Path, j.PathB64 = nameOut(e.Path)
	if e.Target != "" {
		j.Target, j.TargetB64 = nameOut(e.Target)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads an entry; unknown keys are an error (a manifest
// describes a tree exactly).
func (e *Entry) UnmarshalJSON(b []byte) error {
	var j entryJSON
	if err := strictUnmarshal(b, &j); err != nil {
		return err
	}
	p, err := nameIn("path", j.Path, j.PathB64)
	if err != nil {
		return err
	}
	t, err := nameIn("target", j.Target, j.TargetB64)
	if err != nil {
		return err
	}
	*e = Entry{Path: p, Type: j.Type, Mode: fs.FileMode(j.Mode), Size: j.Size, SHA256: j.SHA256, Target: t}
	return nil
}

// changeJSON is a Change in JSON, keys in the order of the Change struct.
type changeJSON struct {
	Kind    string  `json:"kind"`
	Path    *string `json:"path,omitempty"`
	PathB64 string  `json:"path_b64,omitempty"`
	From    *string `json:"from,omitempty"`
	FromB64 string  `json:"from_b64,omitempty"`
	Type    string  `json:"type"`
	SHA256  string  `json:"sha256,omitempty"`
}

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

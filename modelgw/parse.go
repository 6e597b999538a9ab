package modelgw

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"benchd.dev/client/apitype"
)

// apiOf recognizes the model API of a request by its method and path
// (as the presets' CLIs call them: .../responses, .../chat/completions,
// .../messages).
func apiOf(method, path string) string {
	if method != "POST" {
		return apitype.ModelAPIOther
	}
	p := strings.TrimSuffix(path, "/")
	switch {
	case strings.HasSuffix(p, "/responses"):
		return apitype.ModelAPIResponses
	case strings.HasSuffix(p, "/chat/completions"):
		return apitype.ModelAPIChat
	case strings.HasSuffix(p, "/messages"):
		return apitype.ModelAPIMessages
	}
	return apitype.ModelAPIOther
}

// requestFacts reads what the recorder keeps of a model request's body:
// the model asked for and whether it asked for a stream. A body that is
// not a JSON object gives nothing.
func requestFacts(body []byte) (model string, stream bool) {
	var in struct {
		Model  any `json:"model"`
		Stream any `json:"stream"`
	}
	if json.Unmarshal(body, &in) != nil {
		return "", false
	}
	model, _ = in.Model.(string)
	stream, _ = in.Stream.(bool)
	return clip(model, maxModelName), stream
}

// maxModelName caps a model's name as recorded.
const maxModelName = 256

// clip cuts s to at most n bytes, at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// reply is what a response says of the call: the model that answered,
// the usage it reported, the tool calls it asked for, its text.
type reply struct {
	model string
	usage *apitype.TokenUsage
	tools []apitype.ToolCall
	text  strings.Builder
}

func (r *reply) addText(s string) {
	if room := apitype.MaxModelText - r.text.Len(); room > 0 {
		r.text.WriteString(clip(s, room))
	}
}

func (r *reply) addTool(id, name, args string) {
	r.tools = append(r.tools, apitype.ToolCall{ID: clip(id, 256), Name: clip(name, 256), Arguments: clip(args, apitype.MaxModelText)})
}

// Response bodies are the upstream's: the provider's account of the
// call. They are decoded leniently (a field of the wrong type is left
// out, not an error), and only at the places each API puts them, so that
// text the model wrote (which the agent's prompt may have asked for)
// never reads as usage.

// tokenUsage is the union of the APIs' usage objects.
type tokenUsage struct {
	// Responses, Messages.
	InputTokens  *int64 `json:"input_tokens"`
	OutputTokens *int64 `json:"output_tokens"`
	// Responses.
	InputDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	// Chat Completions.
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
	PromptDetails    *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	// Messages.
	CacheRead  *int64 `json:"cache_read_input_tokens"`
	CacheWrite *int64 `json:"cache_creation_input_tokens"`
}

func val(p *int64) int64 {
	if p == nil || *p < 0 {
		return 0
	}
	return *p
}

// openAI normalizes a Responses or Chat Completions usage; nil when it
// holds no count.
func (u *tokenUsage) openAI() *apitype.TokenUsage {
	if u == nil {
		return nil
	}
	var t apitype.TokenUsage
	switch {
	case u.InputTokens != nil || u.OutputTokens != nil:
		t.InputTokens, t.OutputTokens = val(u.InputTokens), val(u.OutputTokens)
		if u.InputDetails != nil {
			t.CachedInputTokens = max(u.InputDetails.CachedTokens, 0)
		}
		if u.OutputDetails != nil {
			t.ReasoningTokens = max(u.OutputDetails.ReasoningTokens, 0)
		}
	case u.PromptTokens != nil || u.CompletionTokens != nil:
		t.InputTokens, t.OutputTokens = val(u.PromptTokens), val(u.CompletionTokens)
		if u.PromptDetails != nil {
			t.CachedInputTokens = max(u.PromptDetails.CachedTokens, 0)
		}
		if u.CompletionDetails != nil {
			t.ReasoningTokens = max(u.CompletionDetails.ReasoningTokens, 0)
		}
	default:
		return nil
	}
	return &t
}

// anthropic normalizes a Messages usage: input counts the cache's reads
// and writes too.
func (u *tokenUsage) anthropic() *apitype.TokenUsage {
	if u == nil || u.InputTokens == nil && u.OutputTokens == nil && u.CacheRead == nil && u.CacheWrite == nil {
		return nil
	}
	t := apitype.TokenUsage{CachedInputTokens: val(u.CacheRead), CacheWriteTokens: val(u.CacheWrite), OutputTokens: val(u.OutputTokens)}
	t.InputTokens = val(u.InputTokens) + t.CachedInputTokens + t.CacheWriteTokens
	return &t
}

// mergeAnthropic lays a message_delta's usage over message_start's: its
// counts are cumulative, and a field it leaves out keeps the earlier
// value.
func mergeAnthropic(base, delta *tokenUsage) *tokenUsage {
	if base == nil {
		return delta
	}
	if delta == nil {
		return base
	}
	m := *base
	for _, f := range []struct {
		dst **int64
		src *int64
	}{
		{&m.InputTokens, delta.InputTokens}, {&m.OutputTokens, delta.OutputTokens},
		{&m.CacheRead, delta.CacheRead}, {&m.CacheWrite, delta.CacheWrite},
	} {
		if f.src != nil {
			*f.dst = f.src
		}
	}
	return &m
}

// Responses API.

type responsesItem struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Args    string `json:"arguments"`
	Input   string `json:"input"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Action *struct {
		Command []string `json:"command"`
	} `json:"action"`
}

type responsesObject struct {
	Model  string          `json:"model"`
	Output []responsesItem `json:"output"`
	Usage  *tokenUsage     `json:"usage"`
}

func (r *reply) responsesItem(it responsesItem) {
	id := it.CallID
	if id == "" {
		id = it.ID
	}
	switch it.Type {
	case "message":
		for _, c := range it.Content {
			if c.Type == "output_text" {
				r.addText(c.Text)
			}
		}
	case "function_call":
		r.addTool(id, it.Name, it.Args)
	case "custom_tool_call":
		r.addTool(id, it.Name, it.Input)
	case "local_shell_call":
		args := "{}"
		if it.Action != nil {
			b, _ := json.Marshal(map[string]any{"command": it.Action.Command})
			args = string(b)
		}
		r.addTool(id, "local_shell", args)
	}
}

// responses reads a whole Responses API object into r, replacing what
// a stream's events gave so far.
func (r *reply) responses(o responsesObject) {
	r.tools, r.text = nil, strings.Builder{}
	if o.Model != "" {
		r.model = o.Model
	}
	for _, it := range o.Output {
		r.responsesItem(it)
	}
	r.usage = o.Usage.openAI()
}

// Chat Completions.

type chatToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatObject struct {
	Model   string `json:"model"`
	Choices []struct {
		Message *struct {
			Content   any            `json:"content"`
			ToolCalls []chatToolCall `json:"tool_calls"`
		} `json:"message"`
		Delta *struct {
			Content   any            `json:"content"`
			ToolCalls []chatToolCall `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *tokenUsage `json:"usage"`
}

// Anthropic Messages.

type messagesBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Text  string          `json:"text"`
	Input json.RawMessage `json:"input"`
}

type messagesObject struct {
	Model   string          `json:"model"`
	Content []messagesBlock `json:"content"`
	Usage   *tokenUsage     `json:"usage"`
}

// parseBody reads a whole (not streamed) JSON response of api.
func parseBody(api string, body []byte) *reply {
	r := &reply{}
	switch api {
	case apitype.ModelAPIResponses:
		var o responsesObject
		if json.Unmarshal(body, &o) == nil {
			r.responses(o)
		}
	case apitype.ModelAPIChat:
		var o chatObject
		if json.Unmarshal(body, &o) == nil {
			r.model = o.Model
			for _, c := range o.Choices {
				if c.Message == nil {
					continue
				}
				if s, ok := c.Message.Content.(string); ok {
					r.addText(s)
				}
				for _, tc := range c.Message.ToolCalls {
					r.addTool(tc.ID, tc.Function.Name, tc.Function.Arguments)
				}
			}
			r.usage = o.Usage.openAI()
		}
	case apitype.ModelAPIMessages:
		var o messagesObject
		if json.Unmarshal(body, &o) == nil {
			r.model = o.Model
			for _, b := range o.Content {
				switch b.Type {
				case "text":
					r.addText(b.Text)
				case "tool_use", "server_tool_use":
					r.addTool(b.ID, b.Name, string(compactJSON(b.Input)))
				}
			}
			r.usage = o.Usage.anthropic()
		}
	}
	return r
}

func compactJSON(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// maxEventBytes caps one server-sent event's data; a longer event is
// skipped (a Responses stream's last event repeats the whole response,
// so the cap is generous).
const maxEventBytes = 16 << 20

// streamParser reads a server-sent event stream of api as it passes,
// one line at a time, and keeps what its events say of the call.
type streamParser struct {
	api  string
	line []byte // the current line, unterminated
	skip bool   // the current line or event passed maxEventBytes
	data []byte // the current event's data lines, joined by \n
	has  bool   // the current event has a data field
	cr   bool   // the last byte seen was \r

	r reply
	// Responses: the text of the deltas (until response.completed
	// gives the whole), the items done.
	// Chat: tool calls by index, in order of first sight.
	chatTools map[int]*apitype.ToolCall
	chatOrder []int
	// Messages: the usage of message_start and of the deltas, and the
	// blocks by index.
	msgUsage  *tokenUsage
	msgBlocks map[int]*messagesBlock
	msgArgs   map[int]*strings.Builder
	msgOrder  []int
	done      bool // Responses: a whole response was read
}

func newStreamParser(api string) *streamParser {
	return &streamParser{api: api}
}

// Write consumes body bytes; it never fails.
func (p *streamParser) Write(b []byte) (int, error) {
	for _, c := range b {
		switch {
		case c == '\n' && p.cr:
			p.cr = false // the \n of a \r\n
		case c == '\n' || c == '\r':
			p.cr = c == '\r'
			p.endLine()
		default:
			p.cr = false
			if len(p.line) < maxEventBytes {
				p.line = append(p.line, c)
			} else {
				p.skip = true
			}
		}
	}
	return len(b), nil
}

func (p *streamParser) endLine() {
	line := p.line
	p.line = p.line[:0]
	if len(line) == 0 {
		p.dispatch()
		return
	}
	field, value, _ := bytes.Cut(line, []byte(":"))
	if string(field) != "data" {
		return // event:, id:, retry:, comments
	}
	value = bytes.TrimPrefix(value, []byte(" "))
	if p.has {
		p.data = append(p.data, '\n')
	}
	if len(p.data)+len(value) > maxEventBytes {
		p.skip = true
		return
	}
	p.data, p.has = append(p.data, value...), true
}

func (p *streamParser) dispatch() {
	data, has, skip := p.data, p.has, p.skip
	p.data, p.has, p.skip = p.data[:0], false, false
	if !has || skip || bytes.Equal(data, []byte("[DONE]")) {
		return
	}
	switch p.api {
	case apitype.ModelAPIResponses:
		p.responsesEvent(data)
	case apitype.ModelAPIChat:
		p.chatEvent(data)
	case apitype.ModelAPIMessages:
		p.messagesEvent(data)
	}
}

func (p *streamParser) responsesEvent(data []byte) {
	var ev struct {
		Type     string           `json:"type"`
		Delta    string           `json:"delta"`
		Item     *responsesItem   `json:"item"`
		Response *responsesObject `json:"response"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	switch ev.Type {
	case "response.created", "response.in_progress":
		if ev.Response != nil && ev.Response.Model != "" {
			p.r.model = ev.Response.Model
		}
	case "response.output_text.delta":
		if !p.done {
			p.r.addText(ev.Delta)
		}
	case "response.output_item.done":
		if ev.Item != nil && !p.done && ev.Item.Type != "message" {
			p.r.responsesItem(*ev.Item)
		}
	case "response.completed", "response.incomplete", "response.failed":
		if ev.Response != nil {
			p.r.responses(*ev.Response)
			p.done = true
		}
	}
}

func (p *streamParser) chatEvent(data []byte) {
	var o chatObject
	if json.Unmarshal(data, &o) != nil {
		return
	}
	if o.Model != "" {
		p.r.model = o.Model
	}
	if u := o.Usage.openAI(); u != nil {
		p.r.usage = u
	}
	for _, c := range o.Choices {
		if c.Delta == nil {
			continue
		}
		if s, ok := c.Delta.Content.(string); ok {
			p.r.addText(s)
		}
		for _, tc := range c.Delta.ToolCalls {
			i := len(p.chatOrder)
			if tc.Index != nil {
				i = *tc.Index
			}
			if p.chatTools == nil {
				p.chatTools = map[int]*apitype.ToolCall{}
			}
			t, ok := p.chatTools[i]
			if !ok {
				if len(p.chatOrder) >= maxTools {
					continue
				}
				t = &apitype.ToolCall{}
				p.chatTools[i] = t
				p.chatOrder = append(p.chatOrder, i)
			}
			if tc.ID != "" {
				t.ID = clip(tc.ID, 256)
			}
			if tc.Function.Name != "" {
				t.Name = clip(t.Name+tc.Function.Name, 256)
			}
			t.Arguments = clip(t.Arguments+tc.Function.Arguments, apitype.MaxModelText)
		}
	}
}

// maxTools caps the tool calls kept of one response.
const maxTools = 1024

func (p *streamParser) messagesEvent(data []byte) {
	var ev struct {
		Type    string          `json:"type"`
		Index   int             `json:"index"`
		Message *messagesObject `json:"message"`
		Block   *messagesBlock  `json:"content_block"`
		Delta   *struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
		} `json:"delta"`
		Usage *tokenUsage `json:"usage"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			if ev.Message.Model != "" {
				p.r.model = ev.Message.Model
			}
			p.msgUsage = mergeAnthropic(p.msgUsage, ev.Message.Usage)
		}
	case "content_block_start":
		if ev.Block == nil || len(p.msgOrder) >= maxTools {
			return
		}
		if p.msgBlocks == nil {
			p.msgBlocks, p.msgArgs = map[int]*messagesBlock{}, map[int]*strings.Builder{}
		}
		if _, ok := p.msgBlocks[ev.Index]; !ok {
			p.msgOrder = append(p.msgOrder, ev.Index)
		}
		b := *ev.Block
		p.msgBlocks[ev.Index], p.msgArgs[ev.Index] = &b, &strings.Builder{}
		if b.Type == "text" {
			p.r.addText(b.Text)
		}
	case "content_block_delta":
		b := p.msgBlocks[ev.Index]
		if b == nil || ev.Delta == nil {
			return
		}
		switch ev.Delta.Type {
		case "text_delta":
			if b.Type == "text" {
				p.r.addText(ev.Delta.Text)
			}
		case "input_json_delta":
			if a := p.msgArgs[ev.Index]; a.Len() < apitype.MaxModelText {
				a.WriteString(clip(ev.Delta.PartialJSON, apitype.MaxModelText-a.Len()))
			}
		}
	case "message_delta":
		p.msgUsage = mergeAnthropic(p.msgUsage, ev.Usage)
	}
}

// result is what the stream said, once it ended (or was cut).
func (p *streamParser) result() *reply {
	p.endLine() // a last line without its newline
	p.dispatch()
	r := &p.r
	switch p.api {
	case apitype.ModelAPIChat:
		for _, i := range p.chatOrder {
			r.tools = append(r.tools, *p.chatTools[i])
		}
	case apitype.ModelAPIMessages:
		for _, i := range p.msgOrder {
			b := p.msgBlocks[i]
			if b.Type != "tool_use" && b.Type != "server_tool_use" {
				continue
			}
			args := p.msgArgs[i].String()
			if args == "" {
				args = string(compactJSON(b.Input))
			}
			r.addTool(b.ID, b.Name, args)
		}
		r.usage = p.msgUsage.anthropic()
	}
	return r
}

package modelfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Responses API (POST .../responses).

type responsesRequest struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Tools  []json.RawMessage `json:"tools"`
	Input  json.RawMessage   `json:"input"`
}

func parseResponses(body []byte) (request, error) {
	var in responsesRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return request{}, fmt.Errorf("unable to decode the request: %w", err)
	}
	r := request{Model: in.Model, Stream: in.Stream}
	for _, raw := range in.Tools {
		var t struct {
			Type       string         `json:"type"`
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return request{}, fmt.Errorf("unable to decode a tool: %w", err)
		}
		switch t.Type {
		case "function":
			r.Tools = append(r.Tools, Tool{Name: t.Name, Kind: "function", Schema: t.Parameters})
		case "custom":
			r.Tools = append(r.Tools, Tool{Name: t.Name, Kind: "custom"})
		case "local_shell":
			r.Tools = append(r.Tools, Tool{Name: "local_shell", Kind: "local_shell"})
		}
	}
	var items []struct {
		Type   string          `json:"type"`
		Output json.RawMessage `json:"output"`
	}
	if len(in.Input) > 0 && in.Input[0] == '[' {
		if err := json.Unmarshal(in.Input, &items); err != nil {
			return request{}, fmt.Errorf("unable to decode the input: %w", err)
		}
	}
	for _, it := range items {
		switch it.Type {
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			r.ToolResults++
			r.LastResult = resultText(it.Output)
		}
	}
	return r, nil
}

func (s *Server) answerResponses(w http.ResponseWriter, req request, act action) {
	respID := s.id("resp")
	var item map[string]any
	itemID := s.id("item")
	if c := act.call; c != nil {
		callID := s.id("call")
		switch c.Tool.Kind {
		case "custom":
			item = map[string]any{"type": "custom_tool_call", "id": itemID, "call_id": callID, "name": c.Tool.Name, "input": c.Input, "status": "completed"}
		case "local_shell":
			item = map[string]any{"type": "local_shell_call", "id": itemID, "call_id": callID, "status": "completed",
				"action": map[string]any{"type": "exec", "command": c.Argv}}
		default:
			item = map[string]any{"type": "function_call", "id": itemID, "call_id": callID, "name": c.Tool.Name, "arguments": c.arguments(), "status": "completed"}
		}
	} else {
		item = map[string]any{"type": "message", "id": itemID, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": act.text, "annotations": []any{}}}}
	}
	usage := map[string]any{"input_tokens": tokens(req.size), "output_tokens": 10, "total_tokens": tokens(req.size) + 10,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	resp := func(status string, output []any) map[string]any {
		m := map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": status,
			"model": req.Model, "output": output}
		if status == "completed" {
			m["usage"] = usage
		}
		return m
	}
	if !req.Stream {
		writeJSON(w, resp("completed", []any{item}))
		return
	}
	ev := newSSE(w)
	seq := 0
	send := func(typ string, m map[string]any) {
		m["type"], m["sequence_number"] = typ, seq
		seq++
		ev.event(typ, m)
	}
	send("response.created", map[string]any{"response": resp("in_progress", []any{})})
	send("response.in_progress", map[string]any{"response": resp("in_progress", []any{})})
	send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	if act.call == nil {
		send("response.content_part.added", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		send("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "delta": act.text})
		send("response.output_text.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "text": act.text})
		send("response.content_part.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": act.text, "annotations": []any{}}})
	} else if act.call.Tool.Kind == "function" {
		send("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": 0, "delta": act.call.arguments()})
		send("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": 0, "arguments": act.call.arguments()})
	}
	send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	send("response.completed", map[string]any{"response": resp("completed", []any{item})})
}

// Chat Completions (POST .../chat/completions).

type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func parseChat(body []byte) (request, error) {
	var in chatRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return request{}, fmt.Errorf("unable to decode the request: %w", err)
	}
	r := request{Model: in.Model, Stream: in.Stream, Usage: in.StreamOptions != nil && in.StreamOptions.IncludeUsage}
	for _, t := range in.Tools {
		if t.Type == "function" {
			r.Tools = append(r.Tools, Tool{Name: t.Function.Name, Kind: "function", Schema: t.Function.Parameters})
		}
	}
	for _, m := range in.Messages {
		if m.Role == "tool" {
			r.ToolResults++
			r.LastResult = resultText(m.Content)
		}
	}
	return r, nil
}

func (s *Server) answerChat(w http.ResponseWriter, req request, act action) {
	id := s.id("chatcmpl")
	created := time.Now().Unix()
	usage := map[string]any{"prompt_tokens": tokens(req.size), "completion_tokens": 10, "total_tokens": tokens(req.size) + 10}
	finish := "stop"
	var toolCalls []any
	if c := act.call; c != nil {
		finish = "tool_calls"
		toolCalls = []any{map[string]any{"index": 0, "id": s.id("call"), "type": "function",
			"function": map[string]any{"name": c.Tool.Name, "arguments": c.arguments()}}}
	}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": nil}
		if toolCalls != nil {
			msg["tool_calls"] = toolCalls
		} else {
			msg["content"] = act.text
		}
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	ev := newSSE(w)
	chunk := func(delta map[string]any, fin any) {
		ev.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin}}})
	}
	if toolCalls != nil {
		c := act.call
		chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"index": 0,
			"id": toolCalls[0].(map[string]any)["id"], "type": "function",
			"function": map[string]any{"name": c.Tool.Name, "arguments": ""}}}}, nil)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0,
			"function": map[string]any{"arguments": c.arguments()}}}}, nil)
	} else {
		chunk(map[string]any{"role": "assistant", "content": ""}, nil)
		chunk(map[string]any{"content": act.text}, nil)
	}
	chunk(map[string]any{}, finish)
	if req.Usage {
		ev.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{}, "usage": usage})
	}
	ev.done()
}

// Anthropic Messages (POST .../messages).

type messagesRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name        string         `json:"name"`
		Type        string         `json:"type"`
		InputSchema map[string]any `json:"input_schema"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func parseMessages(body []byte) (request, error) {
	var in messagesRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return request{}, fmt.Errorf("unable to decode the request: %w", err)
	}
	r := request{Model: in.Model, Stream: in.Stream}
	for _, t := range in.Tools {
		if t.InputSchema != nil {
			r.Tools = append(r.Tools, Tool{Name: t.Name, Kind: "function", Schema: t.InputSchema})
		}
	}
	for _, m := range in.Messages {
		if m.Role != "user" || len(m.Content) == 0 || m.Content[0] != '[' {
			continue
		}
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return request{}, fmt.Errorf("unable to decode a message: %w", err)
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				r.ToolResults++
				r.LastResult = resultText(b.Content)
			}
		}
	}
	return r, nil
}

func (s *Server) answerMessages(w http.ResponseWriter, req request, act action) {
	id := s.id("msg")
	in := tokens(req.size)
	stop := "end_turn"
	var block map[string]any
	if c := act.call; c != nil {
		stop = "tool_use"
		block = map[string]any{"type": "tool_use", "id": s.id("toolu"), "name": c.Tool.Name, "input": c.Args}
	} else {
		block = map[string]any{"type": "text", "text": act.text}
	}
	if !req.Stream {
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": 10}})
		return
	}
	ev := newSSE(w)
	send := func(typ string, m map[string]any) {
		m["type"] = typ
		ev.event(typ, m)
	}
	send("message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant",
		"model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
	if c := act.call; c != nil {
		send("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "tool_use",
			"id": block["id"], "name": c.Tool.Name, "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": c.arguments()}})
	} else {
		send("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": act.text}})
	}
	send("content_block_stop", map[string]any{"index": 0})
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 10}})
	send("message_stop", map[string]any{})
}

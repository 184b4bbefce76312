// A small Server-Sent Events parser for a fetch() body (the page cannot use EventSource: the session token goes
// in a request header, which EventSource cannot send). It follows the "event stream interpretation" of the HTML
// standard: lines end in CRLF, LF or CR (a CR at the end of one chunk and the LF that starts the next are one
// line end); a line starting with ":" is a comment (the server's heartbeat); "field: value" loses one space after
// the colon; data lines join with "\n"; an empty line dispatches the message; `id` without NUL sets the last
// event id, even for a message without data; `retry` takes digits only. Bytes are decoded with a streaming
// TextDecoder, so a character split across chunks is decoded whole. A line longer than `maxLineChars` is refused
// (a stream that never ends a line is not buffered without limit).
"use strict";

globalThis.RouteQuoteSSE = (() => {
  const MAX_LINE_CHARS = 1 << 20; // one event is a few KB

  /** createParser({onMessage, onComment, onRetry}) -> {feed(bytesOrText), end()}. onMessage receives
   * {id, event, data}: `id` is the last event id in force when it was dispatched. */
  function createParser({ onMessage, onComment = () => {}, onRetry = () => {}, maxLineChars = MAX_LINE_CHARS }) {
    const decoder = new TextDecoder("utf-8");
    let pending = ""; // text after the last complete line
    let skipLf = false; // the previous chunk ended in CR: a leading LF is part of that line end
    let first = true; // a BOM is stripped once, at the start of the stream
    let data = [];
    let eventType = "";
    let lastEventId = "";

    function dispatch() {
      if (data.length) onMessage({ id: lastEventId, event: eventType || "message", data: data.join("\n") });
      data = [];
      eventType = "";
    }

    function line(text) {
      if (text === "") return dispatch();
      if (text.startsWith(":")) return onComment(text.slice(1).replace(/^ /, ""));
      const colon = text.indexOf(":");
      const field = colon < 0 ? text : text.slice(0, colon);
      const value = colon < 0 ? "" : text.slice(colon + 1).replace(/^ /, "");
      if (field === "data") data.push(value);
      else if (field === "event") eventType = value;
      else if (field === "id") { if (!value.includes("\0")) lastEventId = value; }
      else if (field === "retry") { if (/^\d+$/.test(value)) onRetry(Number(value)); }
      // any other field is ignored, as the standard says
    }

    function consume(text) {
      if (first && text) {
        first = false;
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      }
      if (skipLf && text) {
        skipLf = false;
        if (text[0] === "\n") text = text.slice(1);
      }
      let buffer = pending + text;
      let start = 0;
      for (;;) {
        const cr = buffer.indexOf("\r", start);
        const lf = buffer.indexOf("\n", start);
        const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
        if (end < 0) break;
        line(buffer.slice(start, end));
        if (buffer[end] === "\r") {
          if (end + 1 === buffer.length) { skipLf = true; start = end + 1; break; }
          start = buffer[end + 1] === "\n" ? end + 2 : end + 1;
        } else start = end + 1;
      }
      pending = buffer.slice(start);
      if (pending.length > maxLineChars) throw new Error(`an event-stream line longer than ${maxLineChars} characters`);
    }

    return {
      feed(chunk) { consume(typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true })); },
      /** The stream ended: a last line without its line end is dropped, and so is an undispatched message. */
      end() { consume(decoder.decode()); pending = ""; data = []; eventType = ""; },
      get lastEventId() { return lastEventId; },
    };
  }

  return Object.freeze({ createParser });
})();

// Chat page: streams from /v1/chat/completions and shows the text through the token pacer.
// Counts: the pacer releases text pieces (SSE deltas), and one piece can hold several tokens
// (a byte-level model's bytes wait until they form a character), so the page names pieces as
// pieces and takes the token count from the stream's usage chunk.
import { ApiError, describe, responseError } from "/static/errors.js";
import { ModelList } from "/static/models.js";
import { TokenPacer, sseChunks } from "/static/pacer.js";

const $ = (id) => document.getElementById(id);
const messages = []; // the conversation sent to the server
const chat = { lastPacer: null, lastRequest: null, lastUsage: null, messages };
window.kairosChat = chat;
let controller = null;
let ticker = null;
let busy = false;
const KEY_PAUSE_MS = 400; // models are listed again once the key stops changing this long

function authHeaders() {
  const key = $("api-key").value.trim();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

function setStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").classList.toggle("error", isError);
}

const models = new ModelList({
  select: $("model"),
  headers: authHeaders,
  onChange: (list) => {
    if (!busy) setStatus(list.status, list.isError);
    setBusy(busy);
  },
});
chat.models = models;

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** Tokens from the usage chunk once it came; until then, honestly, the pieces shown. */
function showTokens(pacer) {
  const el = $("tokens");
  const usage = chat.lastUsage;
  if (usage && Number.isInteger(usage.completion_tokens)) {
    el.dataset.tokens = String(usage.completion_tokens);
    el.textContent = plural(usage.completion_tokens, "token");
    return el.textContent;
  }
  el.dataset.tokens = "";
  el.textContent = pacer ? `${plural(pacer.releaseTimes.length, "text piece")} shown` : "–";
  return el.textContent;
}

function addMessage(role, text = "") {
  const el = document.createElement("div");
  el.className = `msg ${role}`;
  el.textContent = text;
  $("output").append(el);
  el.scrollIntoView({ block: "end" });
  return el;
}

function showPacer(pacer) {
  const n = pacer.bufferedTokens;
  const s = pacer.bufferedSeconds;
  const buffer = $("buffer");
  buffer.dataset.tokens = String(n);
  buffer.dataset.seconds = s.toFixed(3);
  buffer.textContent = `${plural(n, "piece")} · ${s.toFixed(1)} s`;
  $("buffer-bar").style.width = `${Math.min(100, (s / 10) * 100)}%`; // full bar = 10 s
  const q = pacer.qoe();
  $("qoe").dataset.qoe = String(q);
  $("qoe").textContent = `${q.toFixed(3)}${pacer.finished ? "" : " (live)"}`;
  showTokens(pacer);
  if (pacer.finished) return;
  const j = pacer.releaseTimes.length + 1;
  const ready = j === 1 ? pacer.ideal(1) : pacer.releaseTimes[j - 2] + 1 / pacer.tokensPerS;
  if (n === 0 && pacer.now() > Math.max(ready, pacer.ideal(j))) {
    setStatus(j === 1 ? "waiting for the first token (late)" : "stalled: waiting for tokens");
  } else {
    setStatus(j === 1 && n === 0 ? "waiting for the first token" : "streaming");
  }
}

function readSettings() {
  const speed = Number($("speed").value);
  const ttft = Number($("ttft").value);
  const maxTokens = Number($("max-tokens").value);
  const temperature = Number($("temperature").value);
  if (!(speed > 0) || !(ttft >= 0)) throw new Error("speed must be > 0 and TTFT >= 0");
  if (!(temperature >= 0)) throw new Error("temperature must be >= 0");
  return { speed, ttft, maxTokens, temperature };
}

/** Send needs a listed model and no answer in flight; Stop needs an answer in flight. */
function setBusy(value) {
  busy = value;
  $("send").disabled = busy || !models.ready;
  $("stop").disabled = !busy;
}

async function send() {
  const prompt = $("prompt").value.trim();
  if (!prompt || controller || !models.ready) return;
  let settings;
  try {
    settings = readSettings();
  } catch (err) {
    setStatus(err.message, true);
    return;
  }
  $("prompt").value = "";
  addMessage("user", prompt);
  messages.push({ role: "user", content: prompt });
  const out = addMessage("assistant");
  out.classList.add("streaming");
  const pacer = new TokenPacer({
    ttftS: settings.ttft,
    tokensPerS: settings.speed,
    onRelease: (text) => {
      out.textContent += text;
      out.scrollIntoView({ block: "end" });
    },
    onChange: showPacer,
  });
  chat.lastPacer = pacer;
  chat.lastUsage = null;
  const body = {
    model: $("model").value,
    messages: [...messages],
    stream: true,
    stream_options: { include_usage: true },
    qoe: { ttft_s: settings.ttft, tokens_per_s: settings.speed },
    temperature: settings.temperature,
  };
  if (settings.maxTokens > 0) body.max_tokens = settings.maxTokens;
  chat.lastRequest = body;
  controller = new AbortController();
  setBusy(true);
  showPacer(pacer);
  ticker = setInterval(() => showPacer(pacer), 100);
  try {
    const resp = await fetch("/v1/chat/completions", {
      method: "POST",
      headers: { "Content-Type": "application/json", ...authHeaders() },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    if (!resp.ok) throw await responseError(resp);
    const onChunk = (c) => {
      if (c.usage) chat.lastUsage = c.usage;
    };
    for await (const text of sseChunks(resp, { onChunk })) pacer.push(text);
    pacer.end();
    for await (const _ of pacer); // wait until everything is released
  } catch (err) {
    if (err.name === "AbortError") pacer.close();
    else {
      pacer.fail(err);
      if (!pacer.arrivalTimes.length) {
        out.remove(); // nothing came: the error line takes the answer's place,
        if (!$("prompt").value) $("prompt").value = prompt; // and the prompt is kept to edit
      }
      addMessage("assistant error", describe(err));
      setStatus(err instanceof ApiError ? `error ${err.status}` : "error", true);
      if (err instanceof ApiError && err.status === 401) models.load(); // show the key hint
    }
  } finally {
    clearInterval(ticker);
    controller = null;
    out.classList.remove("streaming");
    if (pacer.text) messages.push({ role: "assistant", content: pacer.text });
    else messages.pop(); // nothing came back: do not resend this turn
    setBusy(false);
    showPacer(pacer);
    if (!pacer.error) {
      const ttft = pacer.arrivalTimes.length ? pacer.arrivalTimes[0] - pacer.start : NaN;
      const stalls = pacer.stalls.length;
      const what = pacer.closed ? "stopped" : "done";
      const count = showTokens(pacer);
      setStatus(`${what} · ${count} · TTFT ${ttft.toFixed(2)} s · ${plural(stalls, "stall")}`);
    }
  }
}

$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  send();
});
$("settings").addEventListener("submit", (e) => e.preventDefault());
$("prompt").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    send();
  }
});
$("stop").addEventListener("click", () => {
  controller?.abort();
  chat.lastPacer?.close();
});
$("clear").addEventListener("click", () => {
  if (controller) return;
  messages.length = 0;
  $("output").replaceChildren();
});
let keyPause = null;
$("api-key").addEventListener("input", () => {
  clearTimeout(keyPause);
  keyPause = setTimeout(() => models.load(), KEY_PAUSE_MS);
});
$("api-key").addEventListener("change", () => {
  clearTimeout(keyPause);
  models.load();
});
setBusy(false);
models.load();

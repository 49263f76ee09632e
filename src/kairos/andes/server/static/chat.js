// Chat page: streams from /v1/chat/completions and shows the text through the token pacer.
import { TokenPacer, sseChunks } from "/static/pacer.js";

const $ = (id) => document.getElementById(id);
const messages = []; // the conversation sent to the server
const chat = { lastPacer: null, lastRequest: null, lastUsage: null, messages };
window.kairosChat = chat;
let controller = null;
let ticker = null;

function authHeaders() {
  const key = $("api-key").value.trim();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

function setStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").classList.toggle("error", isError);
}

async function loadModels() {
  try {
    const resp = await fetch("/v1/models", { headers: authHeaders() });
    if (!resp.ok) throw new Error(`GET /v1/models: ${resp.status} ${await resp.text()}`);
    const ids = (await resp.json()).data.map((m) => m.id);
    const select = $("model");
    const keep = select.value;
    select.replaceChildren(...ids.map((id) => new Option(id, id)));
    if (ids.includes(keep)) select.value = keep;
    setStatus(ids.length ? "ready" : "no model served", !ids.length);
  } catch (err) {
    setStatus(String(err.message ?? err), true);
  }
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
  buffer.textContent = `${n} tok · ${s.toFixed(1)} s`;
  $("buffer-bar").style.width = `${Math.min(100, (s / 10) * 100)}%`; // full bar = 10 s
  const q = pacer.qoe();
  $("qoe").dataset.qoe = String(q);
  $("qoe").textContent = `${q.toFixed(3)}${pacer.finished ? "" : " (live)"}`;
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
  if (!(speed > 0) || !(ttft >= 0)) throw new Error("speed must be > 0 and TTFT >= 0");
  return { speed, ttft, maxTokens };
}

function setBusy(busy) {
  $("send").disabled = busy;
  $("stop").disabled = !busy;
}

async function send() {
  const prompt = $("prompt").value.trim();
  if (!prompt || controller) return;
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
    if (!resp.ok) throw new Error(`${resp.status}: ${await resp.text()}`);
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
      addMessage("assistant error", String(err.message ?? err));
      setStatus(`error: ${err.message ?? err}`, true);
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
      setStatus(`${what} · ${pacer.releaseTimes.length} tokens · TTFT ${ttft.toFixed(2)} s`
        + ` · ${stalls} stall${stalls === 1 ? "" : "s"}`);
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
$("api-key").addEventListener("change", loadModels);
setBusy(false);
loadModels();

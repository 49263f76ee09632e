// Client-side token pacer (Andes spec section 8), same semantics as kairos.andes.client.pacer.
//
// Token j (1-based) is released at R_j = max(t_j, I_j, R_{j-1} + 1/s) with the ideal time
// I_j = start + ttft + (j-1)/s: never before it arrived, never before its ideal time, never
// faster than s tokens/s. That is qoe.py's consumption timeline C_j. A stall is a pause in
// reading: the user is ready for token j at max(I_j, R_{j-1} + 1/s) but it arrives later.

const EPS = 1e-9; // a timer this little early counts as on time (float/clock rounding only)

/** Tokens due by time t: 0 before arrival + ttft, then floor((t - a - ttft) * s) + 1. */
export function dueTokens(t, arrival, ttft, speed) {
  const start = arrival + ttft;
  return t < start ? 0 : Math.floor((t - start) * speed + 1e-9) + 1;
}

/** Port of kairos.andes.qoe.qoe_at: QoE of a stream whose tokens arrived at `times`. */
export function qoeAt(times, arrival, ttft, speed, { t = null, finished = true } = {}) {
  let arrived = Float64Array.from(times).sort();
  let stamps;
  let m;
  if (finished) {
    m = arrived.length;
    stamps = arrived;
  } else {
    if (t === null || t === undefined) throw new Error("an unfinished stream needs the time t");
    arrived = arrived.filter((x) => x <= t);
    m = dueTokens(t, arrival, ttft, speed);
    if (m === 0) return 1.0;
    if (arrived.length === 0) return 0.0;
    stamps = new Float64Array(m).fill(t);
    stamps.set(arrived.subarray(0, Math.min(m, arrived.length)));
  }
  if (m === 0) return 1.0;
  let lag = 0;
  let lagSum = 0;
  for (let j = 0; j < m; j++) {
    lag = Math.max(lag, stamps[j] - (arrival + ttft + j / speed), 0);
    lagSum += lag;
  }
  const whole = m * lag + (m * (m - 1)) / (2 * speed);
  return whole <= 0 ? 1.0 : 1.0 - lagSum / whole;
}

/**
 * Releases pushed tokens on the ideal timeline.
 *
 * new TokenPacer({ ttftS, tokensPerS, now?, start?, onRelease?, onChange?, setTimer?, clearTimer? })
 *   now()       clock in seconds (default performance.now() / 1000)
 *   start       the request's arrival time on that clock (default now() at construction)
 *   onRelease(text, pacer)  called when a token is released
 *   onChange(pacer)         called on every arrival, release and end
 *   setTimer(fn, seconds) / clearTimer(handle)  timer functions (injectable for tests)
 * push(text) when a token arrives, end() when the stream ends, fail(err) when it breaks,
 * close() to stop early. Also an async iterator of released pieces.
 */
export class TokenPacer {
  constructor({
    ttftS,
    tokensPerS,
    now = () => performance.now() / 1000,
    start = null,
    onRelease = null,
    onChange = null,
    setTimer = (fn, s) => setTimeout(fn, Math.max(0, s * 1000)),
    clearTimer = (h) => clearTimeout(h),
  }) {
    if (!(ttftS >= 0 && Number.isFinite(ttftS))) throw new RangeError(`bad ttftS ${ttftS}`);
    if (!(tokensPerS > 0 && Number.isFinite(tokensPerS))) {
      throw new RangeError(`bad tokensPerS ${tokensPerS}`);
    }
    this.ttftS = ttftS;
    this.tokensPerS = tokensPerS;
    this.now = now;
    this.start = start ?? now();
    this.onRelease = onRelease;
    this.onChange = onChange;
    this._setTimer = setTimer;
    this._clearTimer = clearTimer;
    this._timer = null;
    this._texts = [];
    this.arrivalTimes = [];
    this.releaseTimes = [];
    this.stalls = [];
    this.finished = false;
    this.closed = false;
    this.error = null;
    this._queue = []; // released pieces not yet taken by the async iterator
    this._waiters = [];
  }

  /** Ideal consumption time I_j of token j (1-based). */
  ideal(j) {
    return this.start + this.ttftS + (j - 1) / this.tokensPerS;
  }

  get bufferedTokens() {
    return this.arrivalTimes.length - this.releaseTimes.length;
  }

  get bufferedSeconds() {
    return this.bufferedTokens / this.tokensPerS;
  }

  get done() {
    return this.finished && this.bufferedTokens === 0;
  }

  get text() {
    return this._texts.slice(0, this.releaseTimes.length).join("");
  }

  /** Client-side QoE: over all tokens once finished, else at time t (default now). */
  qoe(t = null) {
    const args = [this.arrivalTimes, this.start, this.ttftS, this.tokensPerS];
    if (this.finished && t === null) return qoeAt(...args);
    return qoeAt(...args, { t: t ?? this.now(), finished: false });
  }

  push(text) {
    if (this.finished) return;
    this.arrivalTimes.push(this.now());
    this._texts.push(text);
    this._changed();
    this._schedule();
  }

  end() {
    if (this.finished) return;
    this.finished = true;
    this._changed();
    this._wake();
  }

  fail(error) {
    this.error = error;
    this.end();
  }

  close() {
    this.closed = true;
    this.finished = true;
    if (this._timer !== null) this._clearTimer(this._timer);
    this._timer = null;
    this._changed();
    this._wake();
  }

  _changed() {
    if (this.onChange) this.onChange(this);
  }

  _schedule() {
    if (this._timer !== null || this.closed || this.bufferedTokens === 0) return;
    const j = this.releaseTimes.length + 1;
    let due = this.ideal(j);
    if (j > 1) due = Math.max(due, this.releaseTimes[j - 2] + 1 / this.tokensPerS);
    const arrived = this.arrivalTimes[j - 1];
    const target = Math.max(due, arrived);
    const fire = () => {
      this._timer = null;
      if (this.closed) return;
      if (this.now() < target - EPS) {
        this._timer = this._setTimer(fire, target - this.now());
        return;
      }
      if (arrived > due + EPS) this.stalls.push([due, arrived]);
      this.releaseTimes.push(this.now());
      const piece = this._texts[j - 1];
      this._queue.push(piece);
      if (this.onRelease) this.onRelease(piece, this);
      this._changed();
      this._wake();
      this._schedule();
    };
    this._timer = this._setTimer(fire, target - this.now());
  }

  _wake() {
    for (const w of this._waiters.splice(0)) w();
  }

  async *[Symbol.asyncIterator]() {
    for (;;) {
      if (this._queue.length) {
        yield this._queue.shift();
      } else if (this.closed || this.done) {
        if (this.error && !this.closed) throw this.error;
        return;
      } else {
        await new Promise((resolve) => this._waiters.push(resolve));
      }
    }
  }
}

/**
 * Text deltas of an OpenAI-compatible SSE fetch() response (`data: {...}` events up to
 * `data: [DONE]`); role-only, empty and usage-only chunks yield nothing. `onChunk(obj)` sees
 * every parsed chunk (e.g. for the final usage).
 */
export async function* sseChunks(response, { onChunk = null } = {}) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let pending = "";
  let data = [];
  const dispatch = () => {
    const payload = data.join("\n");
    data = [];
    if (payload.trim() === "[DONE]") return { done: true };
    const obj = JSON.parse(payload);
    if (obj.error) throw new Error(obj.error.message ?? JSON.stringify(obj.error));
    if (onChunk) onChunk(obj);
    const choice = obj.choices?.[0];
    const text = choice ? (choice.delta ? choice.delta.content : choice.text) : null;
    return { text: typeof text === "string" ? text : "" };
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      pending += decoder.decode(value ?? new Uint8Array(), { stream: !done });
      const lines = pending.split(/\r?\n/);
      pending = done ? "" : lines.pop();
      if (done && lines.length && lines[lines.length - 1] !== "") lines.push("");
      for (const line of lines) {
        if (line.startsWith("data:")) {
          data.push(line.slice(5).replace(/^ /, ""));
        } else if (line.trim() === "" && data.length) {
          const event = dispatch();
          if (event.done) return;
          if (event.text) yield event.text;
        }
      }
      if (done) return;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

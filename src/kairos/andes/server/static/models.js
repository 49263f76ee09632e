// The model selector and its states. Nothing can be sent until a model is listed, so every
// state says what to do next: enter the API key (401), wait while an unreachable or failing
// server is asked again, or read the server's reason. A newer load always wins over an older
// one still in flight (the key may be typed faster than the server answers).
import { ApiError, describe, isNetworkError, responseError } from "/static/errors.js";

export const RETRY_S = 3; // an unreachable or failing server is asked again this often

/** A load that lost to a newer one; never shown. */
class Superseded extends Error {}

export class ModelList {
  /**
   * select: the <select> to fill; headers(): the auth headers to send;
   * onChange(list): called on every state change (list.state, list.status, list.isError).
   */
  constructor({ select, headers, onChange }) {
    this.select = select;
    this.headers = headers;
    this.onChange = onChange;
    this.state = "loading";
    this.status = "loading models…";
    this.isError = false;
    this._seq = 0;
    this._timer = null;
  }

  get ready() {
    return this.state === "ready";
  }

  /** (Re)lists the models; call it again when the API key changes. */
  async load() {
    const seq = ++this._seq;
    clearTimeout(this._timer);
    const keep = this.ready ? this.select.value : null;
    this._show("loading", "(loading)", "loading models…", false);
    try {
      const ids = await this._fetch(seq);
      const select = this.select;
      if (!ids.length) return this._show("empty", "(no model served)", "no model served", true);
      select.replaceChildren(...ids.map((id) => new Option(id, id)));
      if (keep !== null && ids.includes(keep)) select.value = keep;
      this._set("ready", "ready", false);
    } catch (err) {
      if (err instanceof Superseded) return;
      this._failed(err);
    }
  }

  async _fetch(seq) {
    let ids = null;
    let error = null;
    try {
      const resp = await fetch("/v1/models", { headers: this.headers() });
      if (resp.ok) ids = (await resp.json()).data.map((m) => m.id);
      else error = await responseError(resp);
    } catch (err) {
      error = err;
    }
    if (seq !== this._seq) throw new Superseded(); // a stale load's answer is not shown
    if (error) throw error;
    return ids;
  }

  _failed(err) {
    const retry = () => {
      this._timer = setTimeout(() => this.load(), RETRY_S * 1000);
    };
    if (err instanceof ApiError && err.status === 401) {
      if (Object.keys(this.headers()).length) {
        this._show("bad-key", "API key not accepted", "the API key was not accepted: check it", true);
      } else {
        this._show("need-key", "enter the API key", "enter the API key to list the models", true);
      }
    } else if (isNetworkError(err)) {
      const status = `server unreachable; retrying every ${RETRY_S} s`;
      this._show("unreachable", "server unreachable", status, true);
      retry();
    } else if (err instanceof ApiError && (err.status >= 500 || err.status === 429)) {
      this._show("error", `server error ${err.status}`, `${describe(err)} (retrying)`, true);
      retry();
    } else {
      this._show("error", "cannot list models", describe(err), true);
    }
  }

  /** One placeholder option naming the state, shown in the (disabled) select. */
  _show(state, option, status, isError) {
    this.select.replaceChildren(new Option(option, ""));
    this.select.value = "";
    this._set(state, status, isError);
  }

  _set(state, status, isError) {
    this.state = state;
    this.status = status;
    this.isError = isError;
    this.select.disabled = state !== "ready";
    this.select.dataset.state = state;
    this.onChange?.(this);
  }
}

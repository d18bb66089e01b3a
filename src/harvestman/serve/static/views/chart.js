// Pages per second over time: a uPlot line chart (vendor/uplot, loaded as a classic script), fed by
// the crawl's `fetched` events bucketed by second. Redraws at most once a second.

export class RateChart {
  constructor(el) {
    this.el = el;
    this.buckets = new Map(); // epoch second -> pages fetched in it
    this.samples = []; // [epoch, pages/s] from status events, used when no fetched event came
    this.dirty = false;
    this.plot = null;
    this.onResize = () => this.resize();
    window.addEventListener("resize", this.onResize);
    this.timer = setInterval(() => this.draw(), 1000);
  }

  /** Forget everything (the event stream is being replayed from its start). */
  reset() {
    this.buckets.clear();
    this.samples = [];
    this.dirty = true;
  }

  /** A page was fetched at `time` (epoch seconds). */
  addFetch(time) {
    const sec = Math.floor(Number(time) || Date.now() / 1000);
    this.buckets.set(sec, (this.buckets.get(sec) || 0) + 1);
    this.dirty = true;
  }

  /** The server's own pages/s figure now (a fallback when no fetched events arrive). */
  addSample(rate) {
    this.samples.push([Math.floor(Date.now() / 1000), Number(rate) || 0]);
    if (this.samples.length > 3600) this.samples.shift();
    if (!this.buckets.size) this.dirty = true;
  }

  data() {
    const [xs, ys] = this.points();
    if (xs.length === 1) {
      // One point alone makes uPlot pick a span of its own; the second before it had no page.
      xs.unshift(xs[0] - 1);
      ys.unshift(0);
    }
    return [xs, ys];
  }

  points() {
    if (!this.buckets.size) {
      return [this.samples.map((s) => s[0]), this.samples.map((s) => s[1])];
    }
    // A loop, not Math.min(...keys): a crawl of days has more seconds than a call takes arguments.
    let first = Infinity;
    let last = -Infinity;
    for (const sec of this.buckets.keys()) {
      if (sec < first) first = sec;
      if (sec > last) last = sec;
    }
    // The second now under way is still filling: drawing it would show a dip that is not there.
    const now = Math.floor(Date.now() / 1000);
    if (last >= now && last > first) last = now - 1;
    // Long crawls: wider buckets keep the chart at a few hundred points, each still pages per second.
    const step = Math.max(1, Math.ceil((last - first + 1) / 600));
    const xs = [];
    const ys = [];
    for (let t = first; t <= last; t += step) {
      let n = 0;
      for (let k = t; k < t + step; k++) n += this.buckets.get(k) || 0;
      xs.push(t);
      ys.push(n / step);
    }
    return [xs, ys];
  }

  draw() {
    if (!this.dirty) return;
    this.dirty = false;
    const data = this.data();
    this.el.dataset.points = String(data[0].length);
    const uPlot = window.uPlot;
    if (!uPlot) {
      this.el.textContent = `${data[0].length} points (the chart library did not load)`;
      return;
    }
    if (!this.plot) {
      this.el.replaceChildren();
      this.plot = new uPlot(
        {
          width: this.width(),
          height: 200,
          scales: {
            // A short crawl has a point or two: keep a few seconds either side instead of uPlot's
            // default span (years, for a single point).
            x: { time: true, range: (u, min, max) => (max - min < 10 ? [min - 5, max + 5] : [min, max]) },
            y: { range: (u, min, max) => [0, Math.max(1, Math.ceil(max * 1.15))] },
          },
          series: [{}, { label: "pages/s", stroke: "#1f7a5a", width: 2, fill: "rgba(31,122,90,0.12)" }],
          axes: [{}, { size: 50 }],
          legend: { show: true },
        },
        data,
        this.el,
      );
    } else {
      this.plot.setData(data);
    }
  }

  width() {
    return Math.max(200, this.el.clientWidth || this.el.parentElement.clientWidth || 300);
  }

  resize() {
    if (this.plot) this.plot.setSize({ width: this.width(), height: 200 });
  }

  destroy() {
    clearInterval(this.timer);
    window.removeEventListener("resize", this.onResize);
    if (this.plot) this.plot.destroy();
    this.plot = null;
  }
}

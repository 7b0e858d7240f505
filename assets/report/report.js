// hakaru report: builds the tables and uPlot charts from the JSON embedded in the page. No network: everything it
// needs is in the file. After drawing it records on <body>: data-charts (charts made), data-charts-drawn (charts
// whose canvas holds pixels of their lines), data-errors (script errors seen), for the browser tests.
(function () {
  "use strict";
  const body = document.body;
  const data = JSON.parse(document.getElementById("hakaru-data").textContent);
  const main = document.getElementById("report");
  // Per-second windows up to this many make no trend: over-time charts draw them as points.
  const SHORT_WINDOWS = 2;
  const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22"];
  const color = (i) => PALETTE[i % PALETTE.length];
  // A study's repetitions of one target share the target's colour in shades (the first the colour itself, the
  // later ones lighter), so ten runs of two targets read as two families, not ten unrelated lines.
  const family = (s) => (s.target === null || s.target === undefined ? "\u0000" + s.name : s.target);
  const families = [...new Set(data.series.map(family))];
  function shade(hex, r, n) {
    if (n < 2 || r === 0) return hex;
    const t = 0.6 * r / (n - 1);
    return "#" + [1, 3, 5].map((i) => {
      const c = parseInt(hex.slice(i, i + 2), 16);
      return Math.round(c + (255 - c) * t).toString(16).padStart(2, "0");
    }).join("");
  }
  const met = new Map();
  const series = data.series.map((s) => {
    const f = family(s);
    const r = met.get(f) || 0;
    met.set(f, r + 1);
    const n = data.series.filter((x) => family(x) === f).length;
    return Object.assign({ color: shade(color(families.indexOf(f)), r, n), base: color(families.indexOf(f)) }, s);
  });
  const targetColor = (name) => color(Math.max(0, families.indexOf(name)));
  body.dataset.seriesColors = series.map((s) => s.color).join(",");

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.append(typeof c === "string" || typeof c === "number" ? String(c) : c);
    }
    return e;
  }
  // One formatter per precision: toLocaleString makes a new one per call, which is slow over thousands of cells.
  const formats = new Map();
  function num(v, digits) {
    if (v === null || v === undefined || Number.isNaN(v)) return "–";
    const d = digits === undefined ? 1 : digits;
    if (!formats.has(d)) formats.set(d, new Intl.NumberFormat("en-US", { maximumFractionDigits: d }));
    return formats.get(d).format(v);
  }
  function section(title, note) {
    const s = el("section", {}, el("h2", {}, title));
    if (note) s.append(el("p", { class: "note" }, note));
    main.append(s);
    return s;
  }
  function table(head, rows) {
    const t = el("table");
    t.append(el("thead", {}, el("tr", {}, ...head.map((h, i) => el("th", i === 0 || h.text ? { class: "text" } : {},
      h.text || h)))));
    const tb = el("tbody");
    for (const r of rows) tb.append(el("tr", {}, ...r.map((c, i) => el("td", i === 0 || (c && c.text !== undefined)
      ? { class: "text" } : {}, c && c.text !== undefined ? c.text : c))));
    t.append(tb);
    return t;
  }
  const swatch = (s) => el("span", { class: "swatch", style: "background:" + s.color }, "");
  const nameCell = (s) => el("span", { class: "name" }, swatch(s), s.name);

  // ---- charts -------------------------------------------------------------------------------------------------
  const charts = [];
  function addChart(parent, spec) {
    const lines = spec.lines.filter((l) => l.xs.some((x, i) => x !== null && l.ys[i] !== null && !Number.isNaN(l.ys[i])));
    if (lines.length === 0) return;
    spec.lines = lines;
    const box = el("div", { class: "chart" }, el("h3", {}, spec.title));
    if (spec.note) box.append(el("p", { class: "note" }, spec.note));
    const holder = el("div", { class: "plot" });
    box.append(holder);
    parent.append(box);
    charts.push({ spec, holder, plot: null });
  }
  function pointsOf(s, key, xkey) {
    const ps = s.points.filter((p) => p[key] !== null && p[key] !== undefined).slice()
      .sort((a, b) => a[xkey || "x"] - b[xkey || "x"]);
    return { xs: ps.map((p) => p[xkey || "x"]), ys: ps.map((p) => p[key]) };
  }
  function themeColors() {
    const cs = getComputedStyle(body);
    return { fg: cs.getPropertyValue("--fg").trim() || "#000", grid: cs.getPropertyValue("--grid").trim() || "#ddd" };
  }
  function hexToRgb(h) {
    return [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
  }
  // Whether the plot area holds pixels of a line's colour: the proof that the chart drew its data.
  function drewLines(u, lines) {
    const b = u.bbox;
    if (b.width < 1 || b.height < 1) return false;
    const img = u.ctx.getImageData(b.left, b.top, b.width, b.height).data;
    const wanted = lines.map((l) => hexToRgb(l.color));
    for (let i = 0; i < img.length; i += 4) {
      if (img[i + 3] < 200) continue;
      for (const [r, g, bl] of wanted) {
        if (Math.abs(img[i] - r) < 12 && Math.abs(img[i + 1] - g) < 12 && Math.abs(img[i + 2] - bl) < 12) return true;
      }
    }
    return false;
  }
  function percentLabel(x) {
    const p = 100 * (1 - 1 / x);
    if (x < 1.5) return "0%";
    return (Math.round(p * 1000) / 1000) + "%";
  }
  let drawnCharts = new Set();
  function build(c) {
    const spec = c.spec;
    const t = themeColors();
    const tables = spec.lines.map((l) => [l.xs, l.ys]);
    const aligned = uPlot.join(tables);
    const width = Math.max(320, Math.min(main.clientWidth || 1150, 1160));
    const axis = (label, values) => {
      const a = { label, stroke: t.fg, grid: { stroke: t.grid, width: 1 }, ticks: { stroke: t.grid, width: 1 },
        labelFont: "600 13px system-ui, sans-serif", font: "12px system-ui, sans-serif", size: 56 };
      if (values) a.values = values;
      return a;
    };
    const xAxis = axis(spec.xLabel, spec.xValues);
    // Percentile axes: a tick per power of ten (90 %, 99 %, 99.9 %), not uPlot's 2..9 in between.
    if (spec.xLog) xAxis.splits = (u, i, min, max) => {
      const out = [];
      for (let v = 1; v <= max * 1.0001; v *= 10) if (v >= min / 1.0001) out.push(v);
      return out;
    };
    // Client counts are whole numbers.
    if (spec.xWhole) xAxis.incrs = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000, 100000];
    const opts = {
      width,
      height: spec.height || 340,
      scales: {
        x: spec.xLog ? { time: false, distr: 3, log: 10 } : { time: false },
        y: spec.yFromZero === false ? {} : { range: (u, min, max) => [0, max > 0 ? max * 1.08 : 1] },
      },
      axes: [xAxis, Object.assign(axis(spec.yLabel), { size: 70 })],
      series: [{ label: spec.xLabel, value: spec.xLegend || ((u, v) => v === null ? "–" : num(v, 3)) }].concat(
        spec.lines.map((l) => Object.assign({ label: l.name, stroke: l.color, width: 2, dash: l.dash,
          spanGaps: l.spanGaps !== false,
          points: { show: l.points !== false, size: 5, fill: l.color },
          value: (u, v) => v === null ? "–" : num(v, 3) },
          // Two points or fewer make no trend: drawn as points, with no line between them.
          l.pointsOnly ? { paths: () => null, points: { show: true, size: 8, space: 0, fill: l.color } } : {}))),
      // The series' names only: a live legend shows "–" for every value until the cursor is on the chart.
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false } },
      hooks: {
        draw: [(u) => {
          const ctx = u.ctx;
          ctx.save();
          ctx.textAlign = "left";
          ctx.textBaseline = "alphabetic";
          for (const m of spec.vlines || []) {
            const x = u.valToPos(m.x, "x", true);
            if (!(x >= u.bbox.left && x <= u.bbox.left + u.bbox.width)) continue;
            ctx.strokeStyle = m.color; ctx.lineWidth = 1.5 * devicePixelRatio; ctx.setLineDash([6, 4]);
            ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
            if (m.label) { ctx.setLineDash([]); ctx.fillStyle = m.color; ctx.font = (11 * devicePixelRatio) + "px sans-serif";
              ctx.fillText(m.label, x + 4, u.bbox.top + 12 * devicePixelRatio); }
          }
          for (const m of spec.hlines || []) {
            const y = u.valToPos(m.y, "y", true);
            if (!(y >= u.bbox.top && y <= u.bbox.top + u.bbox.height)) continue;
            ctx.strokeStyle = m.color; ctx.lineWidth = 1.5 * devicePixelRatio; ctx.setLineDash([2, 3]);
            ctx.beginPath(); ctx.moveTo(u.bbox.left, y); ctx.lineTo(u.bbox.left + u.bbox.width, y); ctx.stroke();
            if (m.label) { ctx.setLineDash([]); ctx.fillStyle = m.color; ctx.font = (11 * devicePixelRatio) + "px sans-serif";
              ctx.fillText(m.label, u.bbox.left + 6, y - 4); }
          }
          // Repeated runs: a bar to the mean and a whisker over its 95 % interval, in the target's colour.
          for (const b of spec.bars || []) {
            const x = u.valToPos(b.x, "x", true);
            const [y0, ym, ylo, yhi] = [0, b.mean, b.lo, b.hi].map((v) => u.valToPos(v, "y", true));
            const w = 28 * devicePixelRatio;
            ctx.fillStyle = b.color; ctx.globalAlpha = 0.35;
            ctx.fillRect(x - w / 2, ym, w, y0 - ym);
            ctx.globalAlpha = 1; ctx.strokeStyle = b.color; ctx.lineWidth = 2 * devicePixelRatio; ctx.setLineDash([]);
            ctx.beginPath();
            ctx.moveTo(x, ylo); ctx.lineTo(x, yhi);
            ctx.moveTo(x - w / 4, ylo); ctx.lineTo(x + w / 4, ylo);
            ctx.moveTo(x - w / 4, yhi); ctx.lineTo(x + w / 4, yhi);
            ctx.stroke();
          }
          ctx.restore();
          if (drewLines(u, spec.lines)) drawnCharts.add(c);
          body.dataset.chartsDrawn = String(drawnCharts.size);
        }],
      },
    };
    // Bars: one place per target, and room for the top of every interval.
    if (spec.bars && spec.bars.length) {
      const top = Math.max(...spec.bars.map((b) => b.hi));
      const slots = spec.barSlots || spec.bars.length;
      opts.scales.x = { time: false, range: () => [0.5, slots + 0.5] };
      opts.scales.y = { range: () => [0, top > 0 ? top * 1.1 : 1] };
      opts.axes[0].splits = () => spec.bars.map((b) => b.x);
    }
    // The objective line must fit on the latency axis even when every step stayed under it.
    if (spec.hlines && spec.hlines.length) {
      const top = Math.max(...spec.hlines.map((h) => h.y));
      opts.scales.y = { range: (u, min, max) => [0, Math.max(max, top) * 1.08] };
    }
    if (c.plot) c.plot.destroy();
    c.plot = new uPlot(opts, aligned, c.holder);
  }
  function drawAll() {
    drawnCharts = new Set();
    for (const c of charts) build(c);
    body.dataset.charts = String(charts.length);
  }

  // ---- sections -----------------------------------------------------------------------------------------------
  function header() {
    main.append(el("h1", {}, data.title));
    // The answer in sentences before any table: which served more, by how much, where latency rises.
    if (data.headline.length) {
      main.append(el("section", { class: "headline" }, ...data.headline.map((t) => el("p", {}, t))));
    }
    main.append(el("p", { class: "muted" }, "Made by " + data.generator + " from " + series.length + " input(s)."));
    main.append(table(["target", "kind", "steps", "file"], series.map((s) => [nameCell(s),
      { text: s.kind + (s.interrupted ? " (interrupted: figures until the stop)" : "") }, s.points.length,
      { text: s.origin }])));
  }
  function summary() {
    const sec = section("Summary", "Per step: request body (payload), answer size, load, throughput and the latency of " +
      "successes (ms). Failures are requests with an error or a status outside the run's --ok-status.");
    const rows = [];
    // Token streams' columns only when some step streamed them (goodput only when asked).
    const all = series.flatMap((s) => s.points);
    const streamed = all.some((p) => p.ttft_p99_ms !== undefined);
    const tokens = all.some((p) => p.tokens_per_s !== undefined);
    const goodput = all.some((p) => p.goodput_percent !== undefined);
    const opt = (v, d) => v === undefined ? "–" : num(v, d);
    for (const s of series) for (const p of s.points) rows.push([nameCell(s), { text: p.label },
      s.payload_bytes === null ? "–" : num(s.payload_bytes, 0), num(p.answer_bytes, 0), num(p.clients, 0),
      p.rate === null ? "–" : num(p.rate, 1), num(p.qps, 1), p.ok_per_s === null ? "–" : num(p.ok_per_s, 1),
      num(p.mean_ms, 2), num(p.p50_ms, 2), num(p.p99_ms, 2)]
      .concat(streamed ? [opt(p.ttft_p99_ms, 2)] : [], tokens ? [opt(p.tpot_p99_ms, 2), opt(p.tokens_per_s, 1)] : [],
        goodput ? [p.goodput_percent === undefined ? "–" : num(p.goodput_percent, 2) + " %"] : [],
        [p.failed ? num(p.failed, 0) + " (" + num(p.failed_percent, 2) + " %)" : "0"]));
    const first = tokens ? "ttft p99 ms" : "first event p99 ms";
    sec.append(table(["target", { text: "step" }, "payload bytes", "answer bytes", "clients", "rate req/s", "qps req/s",
      "ok/s", "mean ms", "p50 ms", "p99 ms"].concat(streamed ? [first] : [],
      tokens ? ["tpot p99 ms", "output tok/s"] : [], goodput ? ["goodput"] : [], ["failures"]), rows));
    body.dataset.tokenColumns = String(Number(streamed) + 2 * Number(tokens) + Number(goodput));
  }
  // Token streams against the load: TTFT p99, TPOT p99 and output tokens/s per step, on the series' own axis.
  function tokensVersusLoad(sec, list, axis) {
    const lines = (key) => list.map((s) => Object.assign({ name: s.name, color: s.color }, pointsOf(s, key)));
    const has = (key) => list.some((s) => s.points.some((p) => p[key] !== undefined));
    let n = 0;
    if (has("ttft_p99_ms")) { addChart(sec, Object.assign({ title: "Time to first token, p99", yLabel: "ttft p99 (ms)",
      lines: lines("ttft_p99_ms") }, axis)); n++; }
    if (has("tpot_p99_ms")) { addChart(sec, Object.assign({ title: "Time per output token, p99",
      yLabel: "tpot p99 (ms)", lines: lines("tpot_p99_ms") }, axis)); n++; }
    if (has("tokens_per_s")) { addChart(sec, Object.assign({ title: "Output tokens per second",
      yLabel: "output tokens/s", lines: lines("tokens_per_s") }, axis)); n++; }
    body.dataset.tokenLoadCharts = String(Number(body.dataset.tokenLoadCharts || 0) + n);
  }
  function knees(list, key, suffix) {
    return list.filter((s) => s[key] !== null && s[key] !== undefined)
      .map((s) => ({ x: s[key], color: s.color, label: "knee " + suffix }));
  }
  function versusClients() {
    const list = series.filter((s) => s.axis === "clients");
    if (!list.length) return;
    const sec = section("Throughput and latency vs clients",
      "One line per target; a dashed vertical line marks the knee: the last client count before latency climbs " +
      "25 % above its lowest.");
    const lines = (key) => list.map((s) => Object.assign({ name: s.name, color: s.color }, pointsOf(s, key)));
    // Client counts that grow by factors (1, 4, 16, 64, 256) on a log axis, as `chart` draws them: on a linear one
    // the knee is crushed against the left edge.
    const xs = list.flatMap((s) => s.points.map((p) => p.clients)).filter((x) => x > 0);
    const log = xs.length > 2 && Math.max(...xs) / Math.min(...xs) >= 8;
    body.dataset.clientsLog = String(log);
    const axis = { xLabel: "clients" + (log ? " (log scale)" : ""), xWhole: !log, xLog: log };
    addChart(sec, Object.assign({ title: "Throughput vs clients", yLabel: "requests/s", lines: lines("qps") }, axis));
    addChart(sec, Object.assign({ title: "Mean latency vs clients", yLabel: "mean latency (ms)",
      lines: lines("mean_ms"), vlines: knees(list, "knee_mean", "(mean)") }, axis));
    addChart(sec, Object.assign({ title: "p99 latency vs clients", yLabel: "p99 latency (ms)",
      lines: lines("p99_ms"), vlines: knees(list, "knee_p99", "(p99)") }, axis));
    tokensVersusLoad(sec, list, axis);
  }
  function versusRate() {
    const list = series.filter((s) => s.axis === "rate");
    if (!list.length) return;
    const sec = section("Latency vs rate", "Open-loop steps: latency from each request's intended send time. The " +
      "dotted horizontal line is a capacity search's objective; the dashed vertical line the highest rate that met it.");
    const lines = (key) => list.map((s) => Object.assign({ name: s.name, color: s.color }, pointsOf(s, key)));
    const objectives = list.filter((s) => s.objective);
    // The statistic of the first objective (p99.9, mean, ...), else p99.
    const stat = objectives.length ? objectives[0].objective.stat : "p99";
    for (const s of list) for (const p of s.points) {
      p.stat_ms = stat === "mean" ? p.mean_ms : stat === "max" ? p.max_ms : p.percentiles_ms[stat];
      if (p.stat_ms === undefined) p.stat_ms = null;
    }
    const key = "stat_ms";
    addChart(sec, { title: stat + " latency vs rate", xLabel: "rate asked (req/s)", yLabel: stat + " latency (ms)",
      lines: lines(key),
      hlines: objectives.filter((s) => s.objective.stat === stat)
        .map((s) => ({ y: s.objective.limit_ms, color: s.color, label: "objective " + s.objective.text })),
      vlines: objectives.filter((s) => s.objective.capacity_rate !== null)
        .map((s) => ({ x: s.objective.capacity_rate, color: s.color, label: "capacity" })) });
    if (stat !== "mean") addChart(sec, { title: "Mean latency vs rate", xLabel: "rate asked (req/s)",
      yLabel: "mean latency (ms)", lines: lines("mean_ms") });
    addChart(sec, { title: "Throughput vs rate", xLabel: "rate asked (req/s)", yLabel: "requests/s ended",
      lines: lines("qps") });
    tokensVersusLoad(sec, list, { xLabel: "rate asked (req/s)" });
  }
  function spectrum() {
    const list = series.filter((s) => s.spectrum.length);
    if (!list.length) return;
    const sec = section("Percentile spectrum", "HdrHistogram style: latency at each percentile, every step's " +
      "successes pooled per target; the x axis is 1/(1-p) on a log scale.");
    addChart(sec, { title: "Latency by percentile", xLabel: "percentile", yLabel: "latency (ms)", xLog: true,
      xValues: (u, vals) => vals.map(percentLabel), xLegend: (u, v) => v === null ? "–" : percentLabel(v),
      lines: list.map((s) => ({ name: s.name, color: s.color, points: false, xs: s.spectrum.map((p) => p[0]),
        ys: s.spectrum.map((p) => p[1]) })) });
  }
  function gaps() {
    const list = series.filter((s) => s.gaps_spectrum.length);
    body.dataset.gapCharts = "0";
    if (!list.length) return;
    const tokens = list.every((s) => s.first_of === "token");
    const sec = section(tokens ? "Inter-token latency" : "Gaps between events", "--events: every gap between two " +
      "consecutive events of one answer (a token stream: chunks that carry text), every step pooled, at each " +
      "percentile; events that came in one read are 0 apart.");
    addChart(sec, { title: (tokens ? "Inter-token latency" : "Gap between events") + " by percentile",
      xLabel: "percentile", yLabel: tokens ? "inter-token latency (ms)" : "gap (ms)", xLog: true,
      xValues: (u, vals) => vals.map(percentLabel), xLegend: (u, v) => v === null ? "–" : percentLabel(v),
      lines: list.map((s) => ({ name: s.name, color: s.color, points: false, xs: s.gaps_spectrum.map((p) => p[0]),
        ys: s.gaps_spectrum.map((p) => p[1]) })) });
    body.dataset.gapCharts = "1";
  }
  function overTime() {
    const list = series.filter((s) => s.windows.length);
    if (!list.length) return;
    const short = list.filter((s) => s.windows.length <= SHORT_WINDOWS);
    const sec = section("Over time", "Per second, the steps one after another (pauses between steps left out; " +
      "a step's last window, when shorter than half a second, too)." + (short.length ? " Inputs with " +
      SHORT_WINDOWS + " seconds or fewer (" + short.length + " of " + list.length + ") are drawn as points: so few " +
      "make no trend." : ""));
    // A sweep's steps are apart: each line breaks where a step begins (a null there), not joined across.
    const line = (s, i) => {
      // (The break a millisecond before the step's first window, which starts at the step's own instant.)
      const pts = s.windows.map((w) => [w[0], w[i]]).concat((s.step_starts || []).map((t) => [t - 0.001, null]));
      pts.sort((a, b) => a[0] - b[0]);
      // Steps of a window or two are pieces too short to show as lines: their points are drawn.
      const pieces = (s.step_starts || []).length + 1;
      return { name: s.name, color: s.color, points: s.windows.length / pieces < 3,
        pointsOnly: s.windows.length <= SHORT_WINDOWS, spanGaps: false, xs: pts.map((p) => p[0]), ys: pts.map((p) => p[1]) };
    };
    body.dataset.pointsOnly = String(short.length);
    body.dataset.stepBreaks = String(list.reduce((n, s) => n + (s.step_starts || []).length, 0));
    // A ramp: its target per window (a rate dashed on the throughput chart, in the same unit; clients on a chart
    // of their own) and its knees as dashed vertical lines at the instant the rising ramp asked that load.
    const ramps = list.filter((s) => s.ramp);
    const targetLine = (s) => ({ name: s.name + " ramp target", color: s.color, dash: [6, 4], points: false,
      xs: s.ramp.target.map((p) => p[0]), ys: s.ramp.target.map((p) => p[1]) });
    const kneeMarks = ramps.flatMap((s) => s.ramp.knees.map((k) => ({ x: k.t, color: s.color,
      label: "knee (" + k.stat + ") at " + num(k.value, 0) + (s.ramp.of === "rate" ? " req/s" : " clients") })));
    body.dataset.rampTargets = String(ramps.length);
    body.dataset.rampKnees = String(kneeMarks.length);
    if (ramps.length) sec.append(el("p", { class: "muted" }, "Dashed lines: a ramp's target (--stages, " +
      "--rate-stages) and its knee, a ramp's estimate from the windows: where completed throughput stopped " +
      "following the load asked and latency climbed."));
    addChart(sec, { title: "Throughput per second", xLabel: "time (s)", yLabel: "requests/s",
      lines: list.map((s) => line(s, 1)).concat(ramps.filter((s) => s.ramp.of === "rate").map(targetLine)),
      vlines: kneeMarks });
    const clientRamps = ramps.filter((s) => s.ramp.of === "clients");
    if (clientRamps.length) addChart(sec, { title: "Clients asked by the ramp", xLabel: "time (s)",
      yLabel: "clients", lines: clientRamps.map(targetLine), vlines: kneeMarks });
    addChart(sec, { title: "p99 latency per second", xLabel: "time (s)", yLabel: "p99 latency (ms)",
      lines: list.map((s) => line(s, 3)), vlines: kneeMarks });
    addChart(sec, { title: "p50 latency per second", xLabel: "time (s)", yLabel: "p50 latency (ms)",
      lines: list.map((s) => line(s, 2)) });
    // Time to first byte, or with --events to the first event (token), p99 per second: one chart per kind.
    let firstCharts = 0;
    for (const kind of ["byte", "event", "token"]) {
      const timed = list.filter((s) => s.first.length && s.first_of === kind);
      if (!timed.length) continue;
      addChart(sec, { title: "Time to first " + kind + ", p99 per second", note: kind === "byte"
        ? "From each request written to its answer's first byte (the phases' waiting): the server's own time."
        : "From each request written to its answer's first " + kind + " (--events), the answers that ended in " +
          "that second.", xLabel: "time (s)", yLabel: "p99 to first " + kind + " (ms)",
        lines: timed.map((s) => ({ name: s.name, color: s.color, points: false,
          pointsOnly: s.first.length <= SHORT_WINDOWS, xs: s.first.map((w) => w[0]), ys: s.first.map((w) => w[1]) })),
        vlines: kneeMarks });
      firstCharts++;
    }
    body.dataset.firstCharts = String(firstCharts);
    const tokened = list.filter((s) => s.tokens.length);
    if (tokened.length) addChart(sec, { title: "Output tokens per second", note: "--events tokens: output " +
      "tokens of the answers that ended in each second.", xLabel: "time (s)", yLabel: "output tokens/s",
      lines: tokened.map((s) => ({ name: s.name, color: s.color, points: false,
        pointsOnly: s.tokens.length <= SHORT_WINDOWS, xs: s.tokens.map((w) => w[0]), ys: s.tokens.map((w) => w[1]) })),
      vlines: kneeMarks });
    body.dataset.tokenTimeCharts = String(tokened.length ? 1 : 0);
    if (list.some((s) => s.windows.some((w) => w[4] > 0))) addChart(sec, { title: "Failures per second",
      note: "Requests that failed: an error, or a status outside --ok-status.", xLabel: "time (s)",
      yLabel: "failed requests/s", lines: list.map((s) => line(s, 4)) });
  }
  function monitors() {
    const cpu = series.filter((s) => s.points.some((p) => p.server_cpu !== null));
    const probed = series.filter((s) => s.points.some((p) => Object.keys(p.probes).length));
    if (!cpu.length && !probed.length) return;
    const sec = section("Server CPU and probes", "Server CPU: the watched processes over each step (100 % = one " +
      "core); dashed: hakaru's own CPU. Probes: the change of each probe during the step.");
    if (cpu.length) {
      const axes = new Set(cpu.map((s) => s.axis));
      const xLabel = axes.size === 1 && axes.has("rate") ? "rate asked (req/s)" : axes.size === 1 ? "clients" : "clients or rate";
      addChart(sec, { title: "CPU per step", xLabel, yLabel: "CPU (%)", lines: cpu.flatMap((s) => [
        Object.assign({ name: s.name + " server", color: s.color }, pointsOf(s, "server_cpu")),
        Object.assign({ name: s.name + " hakaru", color: s.color, dash: [5, 4] }, pointsOf(s, "generator_cpu"))]) });
    }
    for (const s of probed) {
      const names = [...new Set(s.points.flatMap((p) => Object.keys(p.probes)))];
      sec.append(el("h3", {}, swatch(s), s.name + ": probes"));
      sec.append(table([{ text: "step" }, ...names], s.points.map((p) => [{ text: p.label },
        ...names.map((n) => num(p.probes[n], 3))])));
    }
  }
  function repeatedRuns() {
    const list = series.filter((s) => s.runs);
    if (!list.length) return;
    const sec = section("Repeated runs", "Each target's mean over its complete runs (--runs), the whisker its 95 % " +
      "confidence interval (Student's t; the runs' range below two runs).");
    const names = (u, vals) => vals.map((v) => (list[v - 1] ? list[v - 1].name : ""));
    for (const [key, title, unit] of [["ok_per_s", "Successes per second", "ok/s"], ["p99_ms", "p99 latency", "p99 (ms)"]]) {
      addChart(sec, { title: title + " over repeated runs", xLabel: "target", yLabel: unit, xValues: names,
        xLegend: (u, v) => (list[v - 1] ? list[v - 1].name : "–"),
        lines: list.map((s, i) => ({ name: s.name + " (" + s.runs.n + " runs)", color: s.color, xs: [i + 1],
          ys: [s.runs[key].mean] })),
        bars: list.map((s, i) => Object.assign({ x: i + 1, color: s.color }, s.runs[key])) });
    }
  }
  function answer() {
    if (!data.answer.length) return;
    const sec = section("Answer", "Per target, workload and phase (and sweep step): the mean over the repetitions " +
      "that ran to the end and its 95 % confidence interval (Student's t; the repetitions' range below two). Each " +
      "repetition is one sample. The verdicts below judge the differences; the detail follows them.");
    const where = (a) => [a.group, a.point].filter((x) => x).join(", ") || "–";
    const withCi = (b, d) => b ? num(b.mean, d) + " (" + num(b.lo, d) + " – " + num(b.hi, d) + ")" : "–";
    sec.append(table(["target", { text: "where" }, "runs", "ok/s (95 % interval)", "mean ms (95 % interval)",
      "p99 ms (95 % interval)"], data.answer.map((a) => [
      el("span", { class: "name" }, el("span", { class: "swatch", style: "background:" + targetColor(a.target) }, ""),
        a.target), { text: where(a) }, a.n, withCi(a.ok_per_s, 1), withCi(a.mean_ms, 2), withCi(a.p99_ms, 2)])));
    // Bars with whiskers, one per row, in the target's colour: readable up to a few dozen rows.
    if (data.answer.length > 40) return;
    const label = (a) => a.target + (where(a) === "–" ? "" : " · " + where(a));
    const names = (u, vals) => vals.map((v) => (data.answer[v - 1] ? label(data.answer[v - 1]) : ""));
    for (const [key, title, unit] of [["ok_per_s", "Successes per second", "ok/s"], ["p99_ms", "p99 latency", "p99 (ms)"]]) {
      const rows = data.answer.map((a, i) => ({ a, i })).filter((r) => r.a[key]);
      if (!rows.length) continue;
      addChart(sec, { title: title + ": mean and 95 % interval over the repetitions", xLabel: "target", yLabel: unit,
        xValues: names, xLegend: (u, v) => (data.answer[v - 1] ? label(data.answer[v - 1]) : "–"),
        lines: rows.map((r) => ({ name: label(r.a) + " (" + r.a.n + " runs)", color: targetColor(r.a.target),
          xs: [r.i + 1], ys: [r.a[key].mean] })),
        bars: rows.map((r) => Object.assign({ x: r.i + 1, color: targetColor(r.a.target) }, r.a[key])),
        barSlots: data.answer.length });
    }
  }
  function verdicts() {
    if (!data.verdicts.length) return;
    const sec = section("Verdicts", "As hakaru compare gives them: each target against the first (a study's, per " +
      "workload and phase), Welch's test on the run values and Fieller's interval of the ratio; a verdict only " +
      "where the p-value adjusted over every comparison here (Holm) is below 0.05, so the chance of any false " +
      "alarm stays at 5 %. A percentile gets none when a run has fewer than 10 answers beyond it (p99: 1,000 a " +
      "run, p99.9: 10,000): longer runs give it one.");
    const where = (v) => [v.group, v.point].filter((x) => x).join(", ") || "–";
    sec.append(table(["target", { text: "against" }, { text: "where" }, { text: "figure" }, "ratio",
      { text: "95 % interval" }, "p", "Holm p", { text: "verdict" }], data.verdicts.map((v) => [v.target,
      { text: v.baseline }, { text: where(v) }, { text: v.metric }, num(v.ratio, 3),
      { text: v.interval ? num(v.interval[0], 3) + " – " + num(v.interval[1], 3) : "–" },
      // As compare prints them ("<0.0001"): the rows carry its text.
      v.p_text || "–", v.p_adjusted_text || "–", { text: v.verdict }])));
  }
  function mix() {
    const sec = section("Status and failure mix", "Answers by status and requests that ended with an error, every " +
      "step together (status 0 = timeout, as drnbench counts it).");
    const rows = series.map((s) => {
      const total = Object.values(s.status).reduce((a, b) => a + b, 0) || 1;
      const st = Object.entries(s.status).map(([k, v]) => k + ": " + num(v, 0) + " (" + num(100 * v / total, 2) + " %)");
      const er = Object.entries(s.errors).map(([k, v]) => k + ": " + num(v, 0));
      return [nameCell(s), { text: st.join(", ") || "–" }, { text: er.join(", ") || "none" }];
    });
    sec.append(table(["target", { text: "statuses" }, { text: "errors" }], rows));
  }
  function warnings() {
    const list = series.filter((s) => s.warnings.length);
    if (!list.length && !data.notes.length) return;
    const sec = section("Warnings", "What the runs said before their numbers should be trusted.");
    const ul = el("ul");
    for (const n of data.notes) ul.append(el("li", { class: "warn" }, n));
    for (const s of list) for (const w of s.warnings) ul.append(el("li", {}, swatch(s), s.name + ": " + w));
    sec.append(ul);
  }

  const t0 = performance.now();
  header();
  // The answer first (the means, their intervals, the verdicts), then the detail.
  answer();
  verdicts();
  summary();
  versusClients();
  versusRate();
  spectrum();
  gaps();
  overTime();
  monitors();
  repeatedRuns();
  mix();
  warnings();
  drawAll();
  // Redraw in the colours of the other scheme, and in print colours while printing.
  const dark = window.matchMedia("(prefers-color-scheme: dark)");
  if (dark.addEventListener) dark.addEventListener("change", drawAll);
  window.addEventListener("beforeprint", () => { body.classList.add("printing"); drawAll(); });
  window.addEventListener("afterprint", () => { body.classList.remove("printing"); drawAll(); });
  // Milliseconds from the start of navigation until every chart was drawn, for bench/report.sh.
  body.dataset.renderMs = String(Math.round(performance.now()));
  // The script's own share of it: building the tables and drawing the charts.
  body.dataset.scriptMs = String(Math.round(performance.now() - t0));
  body.dataset.ready = "1";
})();

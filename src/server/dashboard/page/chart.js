// The figures row and the chart of grants per second and mean acquire
// latency over the last CHART_SECONDS (uPlot, loaded by the page as a global
// from the server's own copy), fed by the grants the page sees and the
// server's recent history.
import { api } from './api.js'
import { clock } from './format.js'
import { $, CHART_SECONDS, state } from './state.js'

let chart

export function makeChart() {
  const box = $('chart')
  chart = new uPlot({
    width: box.clientWidth || 800,
    height: 190,
    legend: { live: false },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true }, grants: { auto: true, range: (_, min, max) => [0, Math.max(5, max)] }, ms: { auto: true, range: (_, min, max) => [0, Math.max(1, max)] } },
    series: [
      {},
      { label: 'grants/s', scale: 'grants', stroke: '#2f6fed', width: 1.5, fill: 'rgba(47,111,237,.08)' },
      { label: 'acquire latency, ms (mean)', scale: 'ms', stroke: '#c2362b', width: 1.5, spanGaps: false },
    ],
    axes: [
      // Room for "12:34:56" between labels, so they never overlap.
      { space: 90, values: (_, splits) => splits.map((s) => clock(s * 1000)) },
      { scale: 'grants', label: 'grants/s', size: 50 },
      { scale: 'ms', label: 'ms', side: 1, grid: { show: false }, size: 50 },
    ],
  }, chartData(), box)
  new ResizeObserver(() => chart.setSize({ width: box.clientWidth, height: 190 })).observe(box)
}

/** A grant the page saw: counted in its second (server clock) with how long it waited. */
export function countGrant(event) {
  const second = Math.floor(event.at / 1000)
  const bucket = state.buckets.get(second) ?? { grants: 0, waited: 0 }
  bucket.grants++
  bucket.waited += event.waitedMs ?? 0
  state.buckets.set(second, bucket)
}

export function chartData() {
  const nowSecond = Math.floor((Date.now() + state.clockOffset) / 1000)
  const xs = []
  const grants = []
  const latency = []
  for (let s = nowSecond - CHART_SECONDS; s < nowSecond; s++) {
    const bucket = state.buckets.get(s)
    xs.push(s)
    grants.push(bucket?.grants ?? 0)
    latency.push(bucket ? bucket.waited / bucket.grants : null)
  }
  for (const second of state.buckets.keys()) if (second < nowSecond - CHART_SECONDS) state.buckets.delete(second)
  return [xs, grants, latency]
}

/** The chart moves on, and the figures row is counted again. */
export function everySecond() {
  const data = chartData()
  chart?.setData(data)
  const lastGrants = data[1].at(-1)
  const lastLatency = data[2].at(-1)
  let holders = 0
  let waiters = 0
  for (const lock of state.locks.values()) {
    holders += lock.holders.length
    waiters += lock.waiters.length
  }
  $('n-locks').textContent = state.locks.size.toLocaleString()
  $('n-holders').textContent = holders.toLocaleString()
  $('n-waiters').textContent = waiters.toLocaleString()
  $('n-rate').textContent = lastGrants.toLocaleString()
  $('n-latency').textContent = lastLatency === null ? '—' : `${lastLatency.toFixed(1)} ms`
}

/** The server's own grants per second of the last minutes, so the chart starts with them. */
export async function loadHistory() {
  try {
    const { seconds } = await api('/v1/history')
    for (const { at, grants, waitedMs } of seconds) {
      const second = Math.floor(at / 1000)
      const bucket = state.buckets.get(second)
      // Seconds this page counted itself keep the larger count (it saw them live).
      if (!bucket || bucket.grants < grants) state.buckets.set(second, { grants, waited: waitedMs })
    }
    everySecond()
  } catch { /* an older server: the chart starts now */ }
}

/** The x-axis labels' left and right edges in CSS pixels (for tests: they must not overlap). */
export function xLabels() {
  const axis = chart.axes[0]
  const ctx = document.createElement('canvas').getContext('2d')
  ctx.font = chart.axes[0].font?.[0] ?? '12px system-ui'
  const splits = axis._splits ?? []
  const values = axis._values ?? []
  return splits.map((s, i) => {
    const x = chart.valToPos(s, 'x')
    const width = ctx.measureText(String(values[i] ?? '')).width
    return { left: x - width / 2, right: x + width / 2, text: values[i] }
  })
}

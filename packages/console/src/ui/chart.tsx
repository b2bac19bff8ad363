// A small line chart in SVG of values the page sampled itself (the API reports counts and totals;
// rates are the differences between samples). No library: lines, a zero baseline, the latest
// values in a legend.
import { useEffect, useRef, useState } from 'preact/hooks';

export interface Series {
  readonly name: string;
  readonly values: readonly number[];
}

const WIDTH = 480;
const HEIGHT = 120;
const COLOURS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];

export function LineChart(props: { title: string; series: readonly Series[]; unit?: string }) {
  const points = Math.max(2, ...props.series.map((s) => s.values.length));
  const max = Math.max(1, ...props.series.flatMap((s) => s.values));
  const x = (i: number, n: number): number => ((i + points - n) / (points - 1)) * WIDTH;
  const y = (v: number): number => HEIGHT - (v / max) * (HEIGHT - 8);
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        width={WIDTH}
        height={HEIGHT}
        role="img"
        aria-label={props.title}
      >
        <line x1={0} y1={HEIGHT - 0.5} x2={WIDTH} y2={HEIGHT - 0.5} class="axis" />
        <text x={4} y={12} class="axis-label">
          {formatNumber(max)}
          {props.unit ?? ''}
        </text>
        {props.series.map((s, index) => (
          <polyline
            key={s.name}
            fill="none"
            stroke={COLOURS[index % COLOURS.length]}
            stroke-width={2}
            points={s.values
              .map((v, i) => `${x(i, s.values.length).toFixed(1)},${y(v).toFixed(1)}`)
              .join(' ')}
          />
        ))}
      </svg>
      <ul class="legend">
        {props.series.map((s, index) => (
          <li key={s.name}>
            <svg width={10} height={10} aria-hidden="true">
              <rect width={10} height={10} fill={COLOURS[index % COLOURS.length]} />
            </svg>{' '}
            {s.name}: {formatNumber(s.values[s.values.length - 1] ?? 0)}
            {props.unit ?? ''}
          </li>
        ))}
      </ul>
    </figure>
  );
}

function formatNumber(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

/** The last `keep` values of `sample`, one per new value (each refresh of the view's data), timed. */
export function useSamples<T>(sample: T | undefined, keep = 60): readonly { at: number; value: T }[] {
  const [samples, setSamples] = useState<readonly { at: number; value: T }[]>([]);
  const last = useRef<T | undefined>(undefined);
  useEffect(() => {
    if (sample === undefined || sample === last.current) return;
    last.current = sample;
    setSamples((s) => [...s.slice(-(keep - 1)), { at: Date.now(), value: sample }]);
  }, [sample, keep]);
  return samples;
}

/** Per-second rates of a cumulative counter between consecutive samples (never negative). */
export function rates<T>(
  samples: readonly { at: number; value: T }[],
  counter: (value: T) => number,
): number[] {
  const out: number[] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1];
    const b = samples[i];
    if (a === undefined || b === undefined) continue;
    const seconds = (b.at - a.at) / 1000;
    out.push(seconds <= 0 ? 0 : Math.max(0, (counter(b.value) - counter(a.value)) / seconds));
  }
  return out;
}

// The admin view's usage over time: tokens per UTC day, stacked by user or by model, drawn as SVG by
// this file (no charting library), with each series' totals and, for users, the budget an admin set.
// Reads GET /v1/usage grouped by day and then by user or model.
import { useEffect, useState } from 'react';
import { api, messageOf, type Schemas } from '../api';

type Row = Schemas['UsageRow'];
type Budget = Schemas['BudgetBody'];
type By = 'user' | 'model';

/// How many days the chart covers, today included.
const DAYS = 14;
/// Series beyond this many share one colour class cycle.
const COLOURS = 6;
const WIDTH = 420;
const HEIGHT = 180;
const LEFT = 44;
const BOTTOM = 20;

/// One line of the chart: a user or a model, its tokens per day, and its totals.
export type Series = { id: string; label: string; perDay: number[]; tokens: number; cost: number | null };

/// The UTC dates (YYYY-MM-DD) of the last `count` days, oldest first.
export function lastDays(count: number, now = Date.now()): string[] {
  const today = Math.floor(now / 86_400_000);
  return Array.from({ length: count }, (_, i) => new Date((today - count + 1 + i) * 86_400_000).toISOString().slice(0, 10));
}

/// The report's rows as series over `days`, the largest first; `label` names a series' id.
export function toSeries(rows: Row[], days: string[], label: (id: string) => string): Series[] {
  const byId = new Map<string, Series>();
  for (const row of rows) {
    const day = days.indexOf(row.group ?? '');
    if (day < 0) continue;
    const id = row.subgroup ?? '';
    const series = byId.get(id) ?? { id, label: label(id), perDay: days.map(() => 0), tokens: 0, cost: null };
    const tokens = row.input_tokens + row.output_tokens;
    series.perDay[day] += tokens;
    series.tokens += tokens;
    if (row.cost != null) series.cost = (series.cost ?? 0) + row.cost;
    byId.set(id, series);
  }
  return [...byId.values()].sort((a, b) => b.tokens - a.tokens || a.label.localeCompare(b.label));
}

const number = (n: number) => n.toLocaleString('en-US');
const money = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 4 });

/// A budget's period in its largest whole unit: "a day", "per 7 days", "an hour", "per 90 seconds".
function periodText(secs: number): string {
  const units: [number, string][] = [
    [86_400, 'day'],
    [3_600, 'hour'],
    [60, 'minute'],
    [1, 'second'],
  ];
  const [size, name] = units.find(([size]) => secs % size === 0) ?? [1, 'second'];
  const count = secs / size;
  if (count === 1) return name === 'hour' ? 'an hour' : `a ${name}`;
  return `per ${number(count)} ${name}s`;
}

/// An admin's budget on a user, in words; empty when none is set.
export function budgetText(budget: Budget | undefined): string {
  if (!budget) return '';
  const per = periodText(budget.period_secs ?? 0);
  const parts = [];
  if (budget.period_tokens) parts.push(`${number(budget.period_tokens)} tokens ${per}`);
  if (budget.period_cost) parts.push(`${money(budget.period_cost)} ${per}`);
  if (budget.tokens_per_minute) parts.push(`${number(budget.tokens_per_minute)} tokens a minute`);
  return parts.length ? `budget: ${parts.join(', ')}` : '';
}

function Bars({ series, days, by }: { series: Series[]; days: string[]; by: By }) {
  const totals = days.map((_, d) => series.reduce((sum, s) => sum + s.perDay[d], 0));
  const top = Math.max(1, ...totals);
  const plotHeight = HEIGHT - BOTTOM - 8;
  const slot = (WIDTH - LEFT) / days.length;
  const scale = (tokens: number) => (tokens / top) * plotHeight;
  const summary = series.map((s) => `${s.label} ${number(s.tokens)}`).join(', ');
  return (
    <svg
      className="usage-chart"
      viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
      role="img"
      aria-label={`Tokens per day by ${by}, last ${days.length} days: ${summary || 'none'}`}
    >
      <line className="axis" x1={LEFT} y1={8} x2={LEFT} y2={HEIGHT - BOTTOM} />
      <line className="axis" x1={LEFT} y1={HEIGHT - BOTTOM} x2={WIDTH} y2={HEIGHT - BOTTOM} />
      <text className="tick" x={LEFT - 6} y={14} textAnchor="end">
        {number(top)}
      </text>
      <text className="tick" x={LEFT - 6} y={HEIGHT - BOTTOM} textAnchor="end">
        0
      </text>
      {days.map((day, d) => {
        let y = HEIGHT - BOTTOM;
        return (
          <g key={day}>
            {series.map((s, i) => {
              const height = scale(s.perDay[d]);
              if (s.perDay[d] === 0) return null;
              y -= height;
              return (
                <rect
                  key={s.id}
                  className={`series-${i % COLOURS}`}
                  data-series={s.label}
                  data-day={day}
                  data-tokens={s.perDay[d]}
                  x={LEFT + d * slot + slot * 0.15}
                  y={y}
                  width={slot * 0.7}
                  height={Math.max(height, 1)}
                >
                  <title>{`${day}, ${s.label}: ${number(s.perDay[d])} tokens`}</title>
                </rect>
              );
            })}
            {/* Every other day is named, counting back from today, so the labels never touch. */}
            {(days.length - 1 - d) % 2 === 0 && (
              <text className="tick" x={LEFT + d * slot + slot / 2} y={HEIGHT - 6} textAnchor="middle">
                {day.slice(5)}
              </text>
            )}
          </g>
        );
      })}
    </svg>
  );
}

/// Usage per day by user or model, for admins; `users` names the user ids the report holds.
export function UsageChart({ users }: { users: Schemas['UserBody'][] }) {
  const [by, setBy] = useState<By>('user');
  const [rows, setRows] = useState<Row[] | null>(null);
  const [budgets, setBudgets] = useState<Record<string, Budget>>({});
  const [error, setError] = useState<string | null>(null);
  const days = lastDays(DAYS);
  const from = days[0];
  useEffect(() => {
    api<Schemas['UsageReport']>(`/v1/usage?group_by=day&then_by=${by}&from=${from}`)
      .then((report) => (setRows(report.data), setError(null)))
      .catch((e) => setError(messageOf(e)));
  }, [by, from]);
  const userIds = users.map((u) => u.id).join(',');
  useEffect(() => {
    Promise.all(
      users.map((u) =>
        api<Budget>(`/v1/admin/users/${u.id}/budget`)
          .then((b) => [u.id, b] as const)
          .catch(() => [u.id, undefined] as const),
      ),
    ).then((pairs) => setBudgets(Object.fromEntries(pairs.filter(([, b]) => b)) as Record<string, Budget>));
    // The users' ids, not the list object, decide when budgets are read again.
  }, [userIds]);
  const name = (id: string) => (by === 'user' ? (users.find((u) => u.id === id)?.name ?? id) : id);
  const series = rows ? toSeries(rows, days, name) : [];
  return (
    <section aria-labelledby="usage-title">
      <h3 id="usage-title">Usage, last {DAYS} days</h3>
      <div role="group" aria-label="Show usage by" className="usage-by">
        {(['user', 'model'] as const).map((option) => (
          <button key={option} type="button" aria-pressed={by === option} onClick={() => setBy(option)}>
            By {option}
          </button>
        ))}
      </div>
      {error && <p role="alert">{error}</p>}
      {rows && <Bars series={series} days={days} by={by} />}
      {rows && series.length === 0 && <p className="hint">No usage in these days.</p>}
      <ul className="usage-legend" aria-label={`Usage by ${by}`}>
        {series.map((s, i) => {
          const budget = by === 'user' ? budgetText(budgets[s.id]) : '';
          return (
            <li key={s.id} data-series={s.label} data-tokens={s.tokens}>
              <svg className="swatch" viewBox="0 0 10 10" aria-hidden="true">
                <rect className={`series-${i % COLOURS}`} width="10" height="10" />
              </svg>
              <strong>{s.label}</strong> {number(s.tokens)} tokens
              {s.cost != null && `, cost ${money(s.cost)}`}
              {budget && <span className="hint"> ({budget})</span>}
            </li>
          );
        })}
      </ul>
    </section>
  );
}

// The user's settings: name, location, units, time zone, language and which tools a send offers.
import { useEffect, useState } from 'react';
import { api, messageOf, type Schemas, type UserSettings } from '../api';
import { Field } from './common';

export function SettingsPanel({ onSaved }: { onSaved(): void }) {
  const [s, setS] = useState<UserSettings | null>(null);
  const [note, setNote] = useState<string | null>(null);
  useEffect(() => {
    api<UserSettings>('/v1/settings')
      .then(setS)
      .catch((e) => setNote(messageOf(e)));
  }, []);
  if (!s) return <p>{note ?? 'Loading…'}</p>;
  const set = (patch: Partial<UserSettings>) => setS({ ...s, ...patch });
  const loc = s.location;
  const l10n = s.localization;
  const num = (v: string) => (v.trim() === '' ? undefined : Number(v));
  return (
    <form
      className="settings"
      onSubmit={async (e) => {
        e.preventDefault();
        try {
          // An empty location is left out rather than stored as a place without a name.
          const location = loc.name || loc.lat != null ? loc : undefined;
          const body: Partial<Schemas['SettingsPatch']> = { ...s, location };
          setS(await api<UserSettings>('/v1/settings', { method: 'PUT', body }));
          setNote('Saved');
          onSaved();
        } catch (err) {
          setNote(messageOf(err));
        }
      }}
    >
      <h2 id="panel-title">Settings</h2>
      <Field label="Your name">
        <input value={s.preferred_name} onChange={(e) => set({ preferred_name: e.target.value })} />
      </Field>
      <fieldset>
        <legend>Location</legend>
        <Field label="Place">
          <input value={loc.name ?? ''} onChange={(e) => set({ location: { ...loc, name: e.target.value } })} />
        </Field>
        <Field label="Latitude">
          <input inputMode="decimal" value={loc.lat ?? ''} onChange={(e) => set({ location: { ...loc, lat: num(e.target.value) } })} />
        </Field>
        <Field label="Longitude">
          <input inputMode="decimal" value={loc.lng ?? ''} onChange={(e) => set({ location: { ...loc, lng: num(e.target.value) } })} />
        </Field>
      </fieldset>
      <fieldset>
        <legend>Units</legend>
        <Field label="Distance">
          <select value={l10n.distance_unit} onChange={(e) => set({ localization: { ...l10n, distance_unit: e.target.value as Schemas['DistanceUnit'] } })}>
            <option value="metric">metric</option>
            <option value="imperial">imperial</option>
          </select>
        </Field>
        <Field label="Temperature">
          <select value={l10n.temperature_unit} onChange={(e) => set({ localization: { ...l10n, temperature_unit: e.target.value as Schemas['TemperatureUnit'] } })}>
            <option value="c">°C</option>
            <option value="f">°F</option>
          </select>
        </Field>
        <Field label="Time format">
          <select value={l10n.time_format} onChange={(e) => set({ localization: { ...l10n, time_format: e.target.value as Schemas['TimeFormat'] } })}>
            <option value="24h">24h</option>
            <option value="12h">12h</option>
          </select>
        </Field>
        <Field label="Currency">
          <input value={l10n.currency} onChange={(e) => set({ localization: { ...l10n, currency: e.target.value } })} />
        </Field>
      </fieldset>
      <Field label="Time zone">
        <input value={s.time_zone} onChange={(e) => set({ time_zone: e.target.value })} placeholder="Europe/London" />
      </Field>
      <Field label="Language">
        <select value={s.app_language} onChange={(e) => set({ app_language: e.target.value as Schemas['AppLanguage'] })}>
          {LANGUAGES.map((l) => (
            <option key={l} value={l}>
              {l}
            </option>
          ))}
        </select>
      </Field>
      <label className="check">
        <input type="checkbox" checked={s.web_tools_enabled} onChange={(e) => set({ web_tools_enabled: e.target.checked })} /> Web tools
      </label>
      <p className="hint" data-testid="web-tools-hint">
        Search and page reading. A send gets them only when its model calls tools and the gateway has a search backend; the Inspector says
        whether the next send has them, and why not.
      </p>
      <label className="check">
        <input type="checkbox" checked={s.experimental_tasks} onChange={(e) => set({ experimental_tasks: e.target.checked })} /> Tasks
      </label>
      <button type="submit">Save settings</button>
      {note && <p role="status">{note}</p>}
    </form>
  );
}

const LANGUAGES: Schemas['AppLanguage'][] = ['en', 'de', 'fr', 'es', 'pt-BR', 'ja', 'en-XA'];

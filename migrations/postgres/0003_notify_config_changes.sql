-- Every move of a counter is also announced on the 'promptgate_config' channel, with the owner as
-- payload. Gateway instances listen there and stop trusting that owner's cached setup; Postgres
-- delivers the notification only when the transaction commits, so a rolled-back write announces
-- nothing. SQLite has no such channel and needs no version of this change.
CREATE OR REPLACE FUNCTION bump_config_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed_owner TEXT;
BEGIN
    -- TG_ARGV[0] names the owner column, which differs between tables (user_id, owner).
    IF TG_OP = 'DELETE' THEN
        changed_owner := to_jsonb(OLD) ->> TG_ARGV[0];
    ELSE
        changed_owner := to_jsonb(NEW) ->> TG_ARGV[0];
    END IF;
    INSERT INTO config_versions (owner, version) VALUES (changed_owner, 1)
    ON CONFLICT (owner) DO UPDATE SET version = config_versions.version + 1;
    PERFORM pg_notify('promptgate_config', changed_owner);
    RETURN NULL;
END
$$;

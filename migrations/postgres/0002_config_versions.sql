-- A counter per owner (a user id, or '~system' for the seeded models) that moves whenever anything a
-- send reads from that owner's setup changes: settings, integrations, models, skills, MCP servers.
-- The gateway keeps each user's setup in memory and reads only these counters per send; triggers
-- (not application code) move them, so a write from any instance or by hand is seen by every other.
CREATE TABLE config_versions (
    owner   TEXT PRIMARY KEY,
    version BIGINT NOT NULL
);

CREATE FUNCTION bump_config_version() RETURNS trigger LANGUAGE plpgsql AS $$
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
    RETURN NULL;
END
$$;

CREATE TRIGGER user_settings_config_version AFTER INSERT OR UPDATE OR DELETE ON user_settings
    FOR EACH ROW EXECUTE FUNCTION bump_config_version('user_id');
CREATE TRIGGER integrations_config_version AFTER INSERT OR UPDATE OR DELETE ON integrations
    FOR EACH ROW EXECUTE FUNCTION bump_config_version('user_id');
CREATE TRIGGER models_config_version AFTER INSERT OR UPDATE OR DELETE ON models
    FOR EACH ROW EXECUTE FUNCTION bump_config_version('owner');
CREATE TRIGGER skills_config_version AFTER INSERT OR UPDATE OR DELETE ON skills
    FOR EACH ROW EXECUTE FUNCTION bump_config_version('user_id');
CREATE TRIGGER mcp_servers_config_version AFTER INSERT OR UPDATE OR DELETE ON mcp_servers
    FOR EACH ROW EXECUTE FUNCTION bump_config_version('user_id');

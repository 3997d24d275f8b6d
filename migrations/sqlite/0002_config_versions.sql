-- A counter per owner (a user id, or '~system' for the seeded models) that moves whenever anything a
-- send reads from that owner's setup changes: settings, integrations, models, skills, MCP servers.
-- The gateway keeps each user's setup in memory and reads only these counters per send; triggers
-- (not application code) move them, so a write by another process or by hand is seen too.
CREATE TABLE config_versions (
    owner   TEXT PRIMARY KEY,
    version BIGINT NOT NULL
);

CREATE TRIGGER user_settings_config_version_insert AFTER INSERT ON user_settings BEGIN
    INSERT INTO config_versions (owner, version) VALUES (new.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER user_settings_config_version_update AFTER UPDATE ON user_settings BEGIN
    INSERT INTO config_versions (owner, version) VALUES (new.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER user_settings_config_version_delete AFTER DELETE ON user_settings BEGIN
    INSERT INTO config_versions (owner, version) VALUES (old.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER integrations_config_version_insert AFTER INSERT ON integrations BEGIN
    INSERT INTO config_versions (owner, version) VALUES (new.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER integrations_config_version_update AFTER UPDATE ON integrations BEGIN
    INSERT INTO config_versions (owner, version) VALUES (new.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER integrations_config_version_delete AFTER DELETE ON integrations BEGIN
    INSERT INTO config_versions (owner, version) VALUES (old.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER models_config_version_insert AFTER INSERT ON models BEGIN
    INSERT INTO config_versions (owner, version) VALUES (new.owner, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER models_config_version_update AFTER UPDATE ON models BEGIN
    INSERT INTO config_versions (owner, version) VALUES (new.owner, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER models_config_version_delete AFTER DELETE ON models BEGIN
    INSERT INTO config_versions (owner, version) VALUES (old.owner, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER skills_config_version_insert AFTER INSERT ON skills BEGIN
    INSERT INTO config_versions (owner, version) VALUES (new.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER skills_config_version_update AFTER UPDATE ON skills BEGIN
    INSERT INTO config_versions (owner, version) VALUES (new.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER skills_config_version_delete AFTER DELETE ON skills BEGIN
    INSERT INTO config_versions (owner, version) VALUES (old.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER mcp_servers_config_version_insert AFTER INSERT ON mcp_servers BEGIN
    INSERT INTO config_versions (owner, version) VALUES (new.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER mcp_servers_config_version_update AFTER UPDATE ON mcp_servers BEGIN
    INSERT INTO config_versions (owner, version) VALUES (new.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER mcp_servers_config_version_delete AFTER DELETE ON mcp_servers BEGIN
    INSERT INTO config_versions (owner, version) VALUES (old.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

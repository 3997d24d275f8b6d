-- Whether a user or one of their keys has a budget is part of the setup a gateway keeps in memory,
-- so a request by a spender without limits reads no budget rows. A change to `budgets` moves the
-- user's counter, so a gateway forgets what it remembered about that user's budgets.
CREATE TRIGGER budgets_config_version_insert AFTER INSERT ON budgets BEGIN
    INSERT INTO config_versions (owner, version) VALUES (new.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER budgets_config_version_update AFTER UPDATE ON budgets BEGIN
    INSERT INTO config_versions (owner, version) VALUES (new.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER budgets_config_version_delete AFTER DELETE ON budgets BEGIN
    INSERT INTO config_versions (owner, version) VALUES (old.user_id, 1)
    ON CONFLICT (owner) DO UPDATE SET version = version + 1;
END;

-- Whether a user or one of their keys has a budget is part of the setup a gateway keeps in memory,
-- so a request by a spender without limits reads no budget rows. A change to `budgets` moves the
-- user's counter (and announces it, as every counter move does), so every instance forgets what it
-- remembered about that user's budgets.
CREATE TRIGGER budgets_config_version AFTER INSERT OR UPDATE OR DELETE ON budgets
    FOR EACH ROW EXECUTE FUNCTION bump_config_version('user_id');

-- Budgets in money: a limit per period in the price table's currency, kept in millionths so the
-- sums stay exact. It shares the period of the token budget (period_secs). Its spending is a
-- 'cost' window of budget_spend, counted in cost_micros (its tokens stay 0).
ALTER TABLE budgets ADD COLUMN period_cost_micros BIGINT;
ALTER TABLE budget_spend ADD COLUMN cost_micros BIGINT NOT NULL DEFAULT 0;

-- PostgreSQL twin of migrations/0087_card_details.sql (same version, same resulting schema;
-- INTEGER is BIGINT: paise and Unix seconds outgrow 32 bits). docs/postgres.md.

-- Card details of a payment (issue 14, docs/books.md section 3): what the Payments API's
-- `card` object (expand[]=card) or a report's card columns say, for pricing by network and
-- type. NULL = not given (the plan then prices the payment by its `card` line).
ALTER TABLE payments ADD COLUMN card_network TEXT;        -- Visa, MasterCard, RuPay, ...
ALTER TABLE payments ADD COLUMN card_type TEXT;           -- credit, debit, prepaid
ALTER TABLE payments ADD COLUMN card_international TEXT;  -- 'true' / 'false' as given
ALTER TABLE payments ADD COLUMN card_sub_type TEXT;       -- consumer, business

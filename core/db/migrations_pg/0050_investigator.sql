-- PostgreSQL twin of migrations/0050_investigator.sql (same version, same resulting schema;
-- INTEGER is BIGINT: paise and Unix seconds outgrow 32 bits). docs/postgres.md.

-- Investigator state: verified model answers cached by evidence hash, tokens spent per
-- day, and one circuit breaker per model. None of it is financial data; the audit trail
-- records every investigation, refused tool call and discarded answer.

-- A verified model answer for one exception's (redacted) evidence. Re-investigating the
-- same evidence reads this row instead of calling a model.
CREATE TABLE investigation_cache (
    evidence_hash  TEXT    PRIMARY KEY,      -- sha256 of prompt version + redacted evidence
    exception_id   BIGINT NOT NULL,
    model          TEXT    NOT NULL,
    answer_json    TEXT    NOT NULL,         -- the verified answer, as shown
    tokens         BIGINT NOT NULL DEFAULT 0,
    created_at     BIGINT NOT NULL
);
CREATE INDEX investigation_cache_exception ON investigation_cache (exception_id);

-- Tokens spent per IST day and model, for the daily budget.
CREATE TABLE llm_token_usage (
    day            TEXT    NOT NULL,         -- ISO date, IST
    model          TEXT    NOT NULL,
    calls          BIGINT NOT NULL DEFAULT 0,
    prompt_tokens  BIGINT NOT NULL DEFAULT 0,
    output_tokens  BIGINT NOT NULL DEFAULT 0,
    total_tokens   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (day, model)
);

-- Consecutive failures per model; while open_until is in the future the model is skipped.
CREATE TABLE llm_circuit_breaker (
    model                 TEXT    PRIMARY KEY,
    consecutive_failures  BIGINT NOT NULL DEFAULT 0,
    open_until            BIGINT NOT NULL DEFAULT 0,
    last_error            TEXT,
    updated_at            BIGINT NOT NULL
);

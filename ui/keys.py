"""Every session-state key and widget key the app uses, in one place.

A widget's key is also its session-state key, so two pages never collide and tests can
find a widget by name (`at.text_input(key=keys.QUEUE_SEARCH)`).
"""

# --- shared state ---------------------------------------------------------------------
IDENTITY = "identity"  # ui.auth.Session: who is signed in, their role
DEMO_PERSONA = "demo_persona"  # the demo role chosen on the demo sign-in
DEMO_SANDBOX = "demo_sandbox"  # this session's private copy of the database (demo)
SELECTED_EXCEPTION = "selected_exception_id"  # the exception the Investigation page shows
SELECTED_SETTLEMENT = "selected_settlement_id"  # the settlement the Settlement page shows
FLASH = "flash_message"  # (kind, text) shown once on the next page render
DECISION_FLASH = "decision_message"  # (kind, text) shown once beside the Decision box
DEEP_LINK = "deep_link_exception"  # the ?exception= value already applied
REQUEST_IDS = "request_ids"  # action name -> idempotency key of the pending request

# --- sign-in and sidebar ---------------------------------------------------------------
SIGN_IN = "sign_in"
SIGN_OUT = "sign_out"
DEMO_SIGN_IN = "demo_sign_in"  # prefix: suffixed with the persona's role
DEMO_RESET = "demo_reset"
MY_WORK = "my_work"  # sidebar button: the queue filtered to the signed-in reviewer
OPEN_QUEUE = "open_queue"  # set by a link into the queue: switch to it on this run

# --- Overview page --------------------------------------------------------------------
OVERVIEW_CLASS_CHART = "overview_class_chart"
OVERVIEW_CODE_CHART = "overview_code_chart"
OVERVIEW_AGE_CHART = "overview_age_chart"
OVERVIEW_MATCH_CHART = "overview_match_chart"
OVERVIEW_SHOW_OPENED = "overview_show_opened"
OVERVIEW_SHOW_CLEARED = "overview_show_cleared"
OVERVIEW_SHOW_REVIEW = "overview_show_review"

# --- Exceptions page ------------------------------------------------------------------
QUEUE_CODES = "queue_codes"
QUEUE_CLASSES = "queue_classes"
QUEUE_STATUSES = "queue_statuses"
QUEUE_SETTLEMENT = "queue_settlement"
QUEUE_MIN_AGE = "queue_min_age"
QUEUE_MAX_AGE = "queue_max_age"
QUEUE_MIN_AMOUNT = "queue_min_amount"
QUEUE_MAX_AMOUNT = "queue_max_amount"
QUEUE_ASSIGNEE = "queue_assignee"
QUEUE_SEARCH = "queue_search"
QUEUE_SORT = "queue_sort"
QUEUE_PAGE_SIZE = "queue_page_size"
QUEUE_PAGE = "queue_page"  # prefix: suffixed with a digest of the filter and sort
QUEUE_TABLE = "queue_table"  # prefix: suffixed with a digest of the rows shown
QUEUE_OPEN_CHOICE = "queue_open_choice"
QUEUE_OPEN = "queue_open"
QUEUE_ASSIGN_TO = "queue_assign_to"
QUEUE_ASSIGN = "queue_assign"
QUEUE_ESCALATE_NOTE = "queue_escalate_note"
QUEUE_ESCALATE = "queue_escalate"
QUEUE_EXPORT = "queue_export"
QUEUE_RESET = "queue_reset"
QUEUE_ALL_STATUSES = "queue_all_statuses"
QUEUE_BULK = "queue_bulk"  # toggle: tick several rows (else a click opens one)
QUEUE_MORE = "queue_more_columns"
QUEUE_TABLE_NONCE = "queue_table_nonce"  # moves on when a click opens a row
QUEUE_ORDER = "queue_order"  # ids of the queue page last shown, for "Next exception"
QUEUE_CHANGED = "queue_changed_in_run"  # (what, run id): a link from the Overview's changes
QUEUE_CHANGED_CLEAR = "queue_changed_clear"

# --- Settlement page ------------------------------------------------------------------
SETTLEMENT_SEARCH = "settlement_search"
SETTLEMENT_CHOICE = "settlement_choice"
SETTLEMENT_OPEN_EXCEPTION = "settlement_open_exception"
SETTLEMENT_INVESTIGATE = "settlement_investigate"
SETTLEMENT_LINES = "settlement_lines"
SETTLEMENT_BANK = "settlement_bank"
SETTLEMENT_ROWS = "settlement_rows"
SETTLEMENT_QUEUE = "settlement_queue"
SETTLEMENT_DETAILS = "settlement_details"  # toggle: internal keys (row_key, line_no, ...)

# --- Investigation page ---------------------------------------------------------------
INVESTIGATE_ID = "investigate_id"
INVESTIGATE_ASK = "investigate_ask"
INVESTIGATE_ANSWER = "investigate_answer"  # exception id -> Investigation shown
DECISION_NOTE = "decision_note"
DECISION_RESOLUTION = "decision_resolution"
DECISION_AMOUNT = "decision_amount"
DECISION_RESOLVE = "decision_resolve"
DECISION_ESCALATE = "decision_escalate"
DECISION_REOPEN = "decision_reopen"
DECISION_WITHDRAW = "decision_withdraw"  # the maker withdraws their pending write-off
DECISION_ASSIGNEE = "decision_assignee"
DECISION_ASSIGN = "decision_assign"
DECISION_NEXT = "decision_next"
DECISION_PREVIOUS = "decision_previous"  # the row before, on the queue page last shown
EVIDENCE_TABLE = "evidence_table"  # prefix: one table per evidence section
HISTORY_TABLE = "history_table"
INVESTIGATE_TO_SETTLEMENT = "investigate_to_settlement"
INVESTIGATE_DETAILS = "investigate_details"  # toggle: internal keys in the evidence
PACKET_PDF = "packet_pdf"  # download: the escalation packet as PDF (ui/packet.py)
PACKET_ZIP = "packet_zip"  # download: the escalation packet as a ZIP of CSVs
COMMENT_TEXT = "comment_text"
COMMENT_FILES = "comment_files"  # prefix: suffixed with COMMENT_FILES_NONCE (a new box)
COMMENT_FILES_NONCE = "comment_files_nonce"  # moves on when a comment is posted
COMMENT_POST = "comment_post"
COMMENT_FLASH = "comment_message"  # (kind, text) shown once under the comment form
COMMENT_DOWNLOAD = "comment_download"  # prefix: suffixed with the attachment's id

# --- Data page ------------------------------------------------------------------------
UPLOAD_FILES = "upload_files"
UPLOAD_UNIT = "upload_unit"
UPLOAD_MODE = "upload_mode"
UPLOAD_CONFIRM = "upload_confirm"
UPLOAD_ACCEPT_OLDER = "upload_accept_older"  # take rows that would move back
UPLOAD_IMPORT = "upload_import"
UPLOAD_RESULT = "upload_result"
UPLOAD_PROBLEMS = "upload_problems"
RUN_AS_OF_DATE = "run_as_of_date"
RUN_AS_OF_TIME = "run_as_of_time"
RUN_SETTLEMENT_DAYS = "run_settlement_days"
RUN_INTERNATIONAL_DAYS = "run_international_days"
RUN_GRACE_DAYS = "run_grace_days"
RUN_BANK_DAYS = "run_bank_days"
RUN_HOLIDAYS = "run_holidays"
RUN_START = "run_start"
STREAM_FOLDER = "stream_folder"
STREAM_UNIT = "stream_unit"
STREAM_START = "stream_start"
STREAM_CONFIRM = "stream_confirm"
STREAM_PROBLEMS = "stream_problems"
RUNS_TABLE = "runs_table"
BANK_MAP_FIELD = "bank_map_field"  # prefix: suffixed with the column's position
BANK_MAP_NAME = "bank_map_name"
BANK_MAP_SAVE = "bank_map_save"
SYNC_FROM = "sync_from"
SYNC_TO = "sync_to"
SYNC_START = "sync_start"
SYNC_WATERMARKS = "sync_watermarks"
SYNC_ERRORS = "sync_errors"

# --- Evaluation page ------------------------------------------------------------------
EVALUATION_BY_CODE = "evaluation_by_code"
EVALUATION_CONFUSION = "evaluation_confusion"

# --- Audit page -----------------------------------------------------------------------
AUDIT_ACTOR = "audit_actor"
AUDIT_ACTION = "audit_action"
AUDIT_ENTITY_TYPE = "audit_entity_type"
AUDIT_ENTITY_ID = "audit_entity_id"
AUDIT_LIMIT = "audit_limit"
AUDIT_VERIFY = "audit_verify"
AUDIT_VERIFY_RESULT = "audit_verify_result"
AUDIT_EXPORT = "audit_export"
AUDIT_EXPORT_FORMAT = "audit_export_format"
AUDIT_TABLE = "audit_table"
AUDIT_DETAILS = "audit_details"  # toggle: every payload field and the full hash

# --- Approvals page --------------------------------------------------------------------
APPROVALS_TABLE = "approvals_table"
APPROVAL_CHOICE = "approval_choice"
APPROVAL_NOTE = "approval_note"
APPROVAL_APPROVE = "approval_approve"
APPROVAL_REJECT = "approval_reject"

# --- Admin page -------------------------------------------------------------------------
ADMIN_USERS = "admin_users"
ADMIN_EMAIL = "admin_email"
ADMIN_ROLE = "admin_role"
ADMIN_ADD = "admin_add"
ADMIN_PICK = "admin_pick"
ADMIN_GRANT_ROLE = "admin_grant_role"
ADMIN_GRANT = "admin_grant"
ADMIN_DEACTIVATE = "admin_deactivate"

# --- Books page ------------------------------------------------------------------------
BOOKS_MONTH = "books_month"
BOOKS_CHART = "books_chart"
BOOKS_MOVEMENTS = "books_movements"
BOOKS_OPEN_ITEMS = "books_open_items"
BOOKS_DRILLDOWN = "books_drilldown"
BOOKS_WRITE_OFFS = "books_write_offs"  # the review queue's write-offs not posted
BOOKS_JOURNAL_CSV = "books_journal_csv"
BOOKS_JOURNAL_TALLY = "books_journal_tally"
BOOKS_JOURNAL_SOURCES = "books_journal_sources"
BOOKS_PLANS = "books_plans"
BOOKS_OVERCHARGES = "books_overcharges"
BOOKS_PLAN_EDITOR = "books_plan_editor"
BOOKS_PLAN_FROM = "books_plan_from"
BOOKS_PLAN_SAVE = "books_plan_save"
BOOKS_CLOSE = "books_close"  # asks to close the month: the confirm step follows
BOOKS_CLOSE_ASK = "books_close_ask"  # the month whose close awaits confirmation
BOOKS_CLOSE_CONFIRM = "books_close_confirm"
BOOKS_CLOSE_CANCEL = "books_close_cancel"
BOOKS_REPORT_ZIP = "books_report_zip"
BOOKS_REPORT_PDF = "books_report_pdf"
BOOKS_TAB = "books_tab"
DATA_TAB = "data_tab"  # the Data page's open tab (lazy: the sync status is read when open)
BOOKS_REPORT_BUILD = "books_report_build"
BOOKS_REPORT = "books_report"
BOOKS_GST_STATE = "books_gst_state"
BOOKS_GST_STATE_KEPT = "books_gst_state_kept"
BOOKS_GST_TAXABLE = "books_gst_taxable"
BOOKS_GST_AMOUNT = "books_gst_amount"
BOOKS_GST_TABLE = "books_gst_table"
BOOKS_GST_UPLOAD = "books_gst_upload"
BOOKS_UNCLASSIFIED = "books_unclassified"
# The stored ledger (docs/books.md): rebuild it, or compute it for this session only.
BOOKS_LEDGER_REBUILD = "books_ledger_rebuild"
BOOKS_LEDGER_COMPUTE = "books_ledger_compute"
BOOKS_LEDGER_SESSION = "books_ledger_session"
# Built from the month's raw rows only when asked for (ui/books.py on_request): the button,
# and the result kept for the session with the month (and, for the fee check, the plan
# versions) and the data it was built from.
BOOKS_JOURNAL_BUILD = "books_journal_build"
BOOKS_JOURNAL = "books_journal"
BOOKS_FEES_CHECK = "books_fees_check"
BOOKS_FEES = "books_fees"
BOOKS_GST_COMPUTE = "books_gst_compute"
BOOKS_GST_BASES = "books_gst_bases"
# A closed month's basis (docs/books.md section 4): as kept at the close, or today's data;
# the roll-forward's lines since the close, the journal's vouchers that differ from the one
# kept, and the prior-period adjustment vouchers of the month after a closed one.
BOOKS_BASIS = "books_basis"
BOOKS_SINCE_CLOSE = "books_since_close"
BOOKS_JOURNAL_CHANGES = "books_journal_changes"
BOOKS_JOURNAL_ADJUSTMENTS = "books_journal_adjustments"

# --- while the database cannot be reached (ui.shell.database_down) ---------------------
TYPED_DRAFTS = "typed_drafts"  # {key: text} the boxes below held when it went away
# The boxes a person types into (and the choice the amount box hangs on). After a run that
# could not reach the database the browser no longer holds them (the page was not drawn),
# so the first run that draws the page again puts each back through session state, which
# tells the browser (shell.restore_typed).
TYPED = (
    DECISION_NOTE,
    DECISION_RESOLUTION,
    DECISION_AMOUNT,
    COMMENT_TEXT,
    APPROVAL_NOTE,
    QUEUE_ESCALATE_NOTE,
    QUEUE_SEARCH,
    AUDIT_ENTITY_ID,
    ADMIN_EMAIL,
    BANK_MAP_NAME,
    BOOKS_GST_TAXABLE,
    BOOKS_GST_AMOUNT,
    BOOKS_GST_STATE,
    STREAM_FOLDER,
)

"""Keyboard shortcuts for working the queue: Streamlit's own button shortcuts.

Every shortcut presses an existing button (`st.button(..., shortcut=...)`, Streamlit 1.52+),
so a key does exactly what a click does: the same role check, the same four-eyes rule, the
same audit row, and nothing at all when the button is disabled or not shown. Streamlit
ignores a key without Ctrl/Cmd/Alt while the cursor is in a text box, so typing "j" or "e"
in the note never moves on or escalates; Ctrl+Enter (Cmd+Enter on a Mac) does reach the
Resolve button from inside the note, which is the point.

Streamlit reserves R (rerun) and C (clear caches), so Resolve is Ctrl+Enter, not R.

One thing no button can do is put the cursor in a text box, and the maintained component
(streamlit-shortcuts 1.2.2) cannot either: it looks for an <input>, not the note's
<textarea>, and its listener fires while you type. `note_keys()` therefore adds a few lines
of script for N (cursor into the note) and Esc (out of it); they only move the focus and
never press a button.
"""

from __future__ import annotations

import streamlit as st

from ui import keys

NEXT = "J"
PREVIOUS = "K"
RESOLVE = "Ctrl+Enter"
ESCALATE = "E"
NOTE = "N"  # handled by note_keys(): no button behind it
OPEN = "O"  # the queue's Investigate button

INVESTIGATION_HELP = (
    f"Keyboard: **{NEXT}** next · **{PREVIOUS}** previous · **{NOTE}** write the note · "
    "**Ctrl/⌘+Enter** resolve · **Esc** leave the note · "
    f"**{ESCALATE}** escalate"
)
MOVE_HELP = f"Keyboard: **{NEXT}** next · **{PREVIOUS}** previous"  # without the reviewer role
QUEUE_HELP = f"Keyboard: **{OPEN}** opens the exception chosen below."

# Only focus moves; the note box is found by its widget key's class (st-key-<key>).
_NOTE_SCRIPT = """<script>
(() => {
  if (window.razorreconNoteKeys) return;
  window.razorreconNoteKeys = true;
  document.addEventListener("keydown", (e) => {
    const box = document.querySelector(".st-key-%(key)s textarea");
    if (!box || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    const t = e.target;
    if (e.key === "Escape" && t === box) { box.blur(); return; }
    const typing = t && (t.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"]
      .includes(t.tagName));
    if (!typing && e.key.toLowerCase() === "%(note)s") { e.preventDefault(); box.focus(); }
  });
})();
</script>"""


def note_keys() -> None:
    """N puts the cursor in the Decision box's note; Esc takes it out (so J/K/E work)."""
    st.html(
        _NOTE_SCRIPT % {"key": keys.DECISION_NOTE, "note": NOTE.lower()},
        unsafe_allow_javascript=True,
        width="content",
    )

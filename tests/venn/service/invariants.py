"""What must hold in a Venn store however many front-ends wrote it, read from the database
itself (not from any front-end's belief): each count is the number of rows breaking one rule,
so a clean store gives all zeros."""

from __future__ import annotations

from typing import Any

# An attempt's assignments are those made since it opened (`rounds.opened`): an abort keeps
# the old attempt's rows as history and reopens the round later.
IN_ATTEMPT = "a.job_id = r.job_id AND a.round_idx = r.round_idx AND a.assigned >= r.opened"

CHECKS = {
    # a device assigned twice in one round
    "device_twice_in_round": "SELECT COUNT(*) FROM (SELECT 1 FROM assignments GROUP BY job_id, "
    "round_idx, device_id HAVING COUNT(*) > 1) t",
    # an attempt with more devices than its demand (by its counter or by its rows)
    "round_past_demand": f"SELECT COUNT(*) FROM rounds r WHERE r.dispatched > r.demand OR "
    f"(SELECT COUNT(*) FROM assignments a WHERE {IN_ATTEMPT}) > r.demand",
    # an attempt whose counter disagrees with its rows (a lost or doubled assignment)
    "dispatched_miscounted": f"SELECT COUNT(*) FROM rounds r WHERE r.dispatched != "
    f"(SELECT COUNT(*) FROM assignments a WHERE {IN_ATTEMPT})",
    # an attempt whose response counter disagrees with its recorded responses
    "responses_miscounted": f"SELECT COUNT(*) FROM rounds r WHERE r.responses != "
    f"(SELECT COUNT(*) FROM assignments a WHERE {IN_ATTEMPT} AND a.responded IS NOT NULL)",
    # a response recorded for a device in an attempt it did not serve
    "response_outside_attempt": "SELECT COUNT(*) FROM assignments a JOIN rounds r ON "
    "a.job_id = r.job_id AND a.round_idx = r.round_idx WHERE a.responded IS NOT NULL AND "
    "(a.responded < a.assigned OR (r.closed IS NOT NULL AND a.responded > r.closed))",
    # a job whose completed-round count disagrees with its closed rounds, or runs past them
    "rounds_done_miscounted": "SELECT COUNT(*) FROM jobs j WHERE j.rounds_done != (SELECT "
    "COUNT(*) FROM rounds r WHERE r.job_id = j.job_id AND r.closed IS NOT NULL) OR "
    "j.rounds_done > j.rounds",
}


def violations(conn: Any) -> dict[str, int]:
    """`conn`: a DB-API connection (sqlite3 or psycopg) on the store."""
    out = {}
    for name, sql in CHECKS.items():
        row = conn.execute(sql).fetchone()
        out[name] = int(row[0] if not isinstance(row, dict) else next(iter(row.values())))
    return out


def clean() -> dict[str, int]:
    return dict.fromkeys(CHECKS, 0)

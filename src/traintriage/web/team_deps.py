"""What the team routes (API and pages) share: who is calling, the Team, and small lookups."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any

from fastapi import Depends
from fastapi import Path as FastApiPath
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from traintriage.service import alert_rules, identity
from traintriage.service.identity import Caller, IdentityError
from traintriage.service.models import AlertRule
from traintriage.web.problems import PROBLEM_JSON, Problem
from traintriage.web.team_context import Team, caller_of, team_of

PROBLEM = {"description": "Problem details (RFC 9457)", "content": {PROBLEM_JSON: {"schema": {"type": "object"}}}}
MEMBER_ERRORS: dict[int | str, dict[str, Any]] = {401: PROBLEM}


class Unauthorized(Problem):
    @property
    def title(self) -> str:
        return "Unauthorized"


def the_team(request: Request) -> Team:
    return team_of(request.app)


async def the_caller(request: Request) -> Caller:
    try:
        return await run_in_threadpool(caller_of, request)
    except IdentityError as exc:
        raise Unauthorized(401, str(exc)) from exc


async def a_member(caller: Annotated[Caller, Depends(the_caller)]) -> Caller:
    if caller.owner is None:
        raise Unauthorized(401, "this needs an API key or an evaluation code: send 'Authorization: Bearer <key>' "
                                "or enter it at /sign-in")
    return caller


RuleId = Annotated[int, FastApiPath(ge=1, le=2**31 - 1)]  # the database's integer range
CallerDep = Annotated[Caller, Depends(the_caller)]
MemberDep = Annotated[Caller, Depends(a_member)]
TeamDep = Annotated[Team, Depends(the_team)]


def since_date(value: str | None) -> datetime | None:
    """The history filter's `since` (a date or a time; UTC unless it says otherwise)."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise Problem(422, "'since' must be a date or time like 2026-12-01 or 2026-12-01T08:00:00Z") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def owned_rule(team: Team, caller: Caller, rule_id: int) -> AlertRule:
    """The caller's rule `rule_id`; 404 for a rule that is not theirs (no hint that it exists)."""
    assert caller.owner is not None
    rule = alert_rules.get_rule(team.store, caller.owner, rule_id)
    if rule is None:
        raise Problem(404, f"no alert rule {rule_id}")
    return rule


def request_code(team: Team, caller: Caller, organisation: str, email: str) -> int:
    """File a code request; five a day from one caller, so the form cannot flood the admins."""
    allowance = team.quotas.take(f"code-request:{caller.subject}", 5)
    if not allowance.allowed:
        raise Problem(422, "too many evaluation code requests from here today; try again tomorrow")
    try:
        return identity.request_code(team.store, organisation, email)
    except ValueError as exc:
        raise Problem(422, str(exc)) from exc


def me_json(team: Team, caller: Caller) -> dict[str, Any]:
    """`GET /api/v1/me` and the account page: who is calling and what is left of today's allowance."""
    allowance = team.quotas.peek(caller.subject, caller.daily_limit)
    return {"kind": caller.kind, "name": caller.name, "daily_limit": caller.daily_limit, "used_today": allowance.used,
            "remaining_today": allowance.remaining, "resets_at": allowance.resets_at.isoformat(),
            "expires_at": caller.expires_at.isoformat() if caller.expires_at else None}

"""The team service's API (history, alert rules, follow-up questions, evaluation-code requests,
who-am-I), /readyz and /metrics. Thin: every decision is in `service/`. Pages: `team_pages`.

`install(app)` adds these routes, the quota/metrics middleware, and makes the diagnoses the
app stores belong to their caller (a result stays readable by whoever has its link).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Query
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from traintriage.service import alert_rules, followup, history
from traintriage.service.alert_rules import RuleError, RuleSpec
from traintriage.service.identity import Caller
from traintriage.service.logs import configure_logging
from traintriage.web import team_pages
from traintriage.web.problems import Problem
from traintriage.web.storage import current_owner
from traintriage.web.team_context import Team
from traintriage.web.team_deps import (
    MEMBER_ERRORS,
    PROBLEM,
    CallerDep,
    MemberDep,
    RuleId,
    TeamDep,
    me_json,
    owned_rule,
    request_code,
    since_date,
)
from traintriage.web.team_metrics import exposition
from traintriage.web.team_middleware import TeamMiddleware

api = APIRouter(prefix="/api/v1", tags=["team"])
meta = APIRouter(tags=["meta"])


def install(app: FastAPI) -> None:
    """Wire the team service into the web app (called once from `create_app`)."""
    configure_logging()
    app.add_middleware(TeamMiddleware)
    app.dependency_overrides[current_owner] = owner_for_saving
    for router in (api, team_pages.router, meta):
        app.include_router(router)
    opened = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(application: Any) -> AsyncIterator[Any]:
        """Alerts still being sent finish before the store closes."""
        async with opened(application) as state:
            try:
                yield state
            finally:
                team = getattr(application.state, "team", None)
                if isinstance(team, Team):
                    await run_in_threadpool(team.close)

    app.router.lifespan_context = lifespan


def owner_for_saving(request: Request) -> str | None:
    """A diagnosis a key or code stores goes to its history; reading stays by link."""
    caller = getattr(request.state, "caller", None)
    return caller.owner if isinstance(caller, Caller) and request.method == "POST" else None


# --- API ---------------------------------------------------------------------------------


class QuestionIn(BaseModel):
    question: str = Field(min_length=1, max_length=followup.MAX_QUESTION)


class CodeRequestIn(BaseModel):
    organisation: str = Field(min_length=1, max_length=200)
    email: str = Field(min_length=3, max_length=320)




@api.get("/diagnoses", responses={**MEMBER_ERRORS, 422: PROBLEM})
async def list_diagnoses(caller: MemberDep, team: TeamDep,
                         failure_class: Annotated[str | None, Query(alias="class", max_length=128)] = None,
                         category: Annotated[str | None, Query(max_length=64)] = None,
                         since: Annotated[str | None, Query(max_length=40)] = None,
                         q: Annotated[str | None, Query(max_length=500)] = None,
                         limit: Annotated[int, Query(ge=1, le=200)] = 50,
                         offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0) -> list[dict[str, Any]]:
    """The caller's past diagnoses, newest first; filter by class, category, date, words in the evidence."""
    assert caller.owner is not None
    items = await run_in_threadpool(history.list_history, team.store, caller.owner, failure_class=failure_class,
                                    category=category, since=since_date(since), query=q, limit=limit, offset=offset)
    return [item.as_json() for item in items]


@api.delete("/diagnoses/{diagnosis_id}", status_code=204, responses={**MEMBER_ERRORS, 404: PROBLEM})
async def delete_diagnosis(diagnosis_id: str, caller: MemberDep, team: TeamDep) -> Response:
    """Delete one of the caller's diagnoses, for real."""
    assert caller.owner is not None
    if not await run_in_threadpool(history.delete_one, team.store, caller.owner, diagnosis_id):
        raise Problem(404, f"no diagnosis '{diagnosis_id}' in your history")
    return Response(status_code=204)


@api.delete("/diagnoses", responses=MEMBER_ERRORS)
async def delete_all_diagnoses(caller: MemberDep, team: TeamDep) -> dict[str, int]:
    """Delete every diagnosis in the caller's history."""
    assert caller.owner is not None
    return {"deleted": await run_in_threadpool(history.delete_all, team.store, caller.owner)}


@api.post("/diagnoses/{diagnosis_id}/questions", responses={404: PROBLEM, 422: PROBLEM})
async def ask(diagnosis_id: str, body: QuestionIn, team: TeamDep) -> dict[str, Any]:
    """Answer a question about a diagnosis from its KB entries; every sentence cites {entry, section}."""
    document = await run_in_threadpool(team.store.get_diagnosis, diagnosis_id)
    if document is None:
        raise Problem(404, f"no diagnosis '{diagnosis_id}'")
    try:
        return await run_in_threadpool(followup.answer, document, body.question)
    except followup.QuestionError as exc:
        raise Problem(422, str(exc)) from exc


@api.get("/alert-rules", responses=MEMBER_ERRORS)
async def list_alert_rules(caller: MemberDep, team: TeamDep) -> list[dict[str, Any]]:
    """The caller's alert rules."""
    assert caller.owner is not None
    rules = await run_in_threadpool(alert_rules.list_rules, team.store, caller.owner)
    return [alert_rules.rule_json(rule) for rule in rules]


@api.post("/alert-rules", status_code=201, responses={**MEMBER_ERRORS, 422: PROBLEM})
async def create_alert_rule(caller: MemberDep, team: TeamDep, request: Request) -> JSONResponse:
    """`{"name", "match": {"class"|"category"|"severity"|"fingerprint": value}, "webhook_url"|"email",
    "webhook_format": "json"|"slack", "window_seconds"}`. A JSON webhook's signing secret is returned once."""
    assert caller.owner is not None
    try:
        data = await request.json()
    except ValueError as exc:
        raise Problem(422, "the body must be a JSON object") from exc
    if not isinstance(data, dict):
        raise Problem(422, "the body must be a JSON object")
    try:
        rule = await run_in_threadpool(alert_rules.create_rule, team.store, caller.owner, RuleSpec.from_json(data))
    except RuleError as exc:
        raise Problem(422, str(exc)) from exc
    body = alert_rules.rule_json(rule)
    if rule.webhook_secret:
        body["signing_secret"] = rule.webhook_secret
    return JSONResponse(body, status_code=201)


@api.delete("/alert-rules/{rule_id}", status_code=204, responses={**MEMBER_ERRORS, 404: PROBLEM})
async def delete_alert_rule(rule_id: RuleId, caller: MemberDep, team: TeamDep) -> Response:
    assert caller.owner is not None
    if not await run_in_threadpool(alert_rules.delete_rule, team.store, caller.owner, rule_id):
        raise Problem(404, f"no alert rule {rule_id}")
    return Response(status_code=204)




def _delivery_json(delivery: Any) -> dict[str, Any]:
    return {"id": delivery.id, "created_at": delivery.created_at.isoformat(), "test": delivery.test,
            "diagnosis_id": delivery.diagnosis_id, "fingerprint": delivery.fingerprint, "status": delivery.status,
            "attempts": delivery.attempts, "response_code": delivery.response_code, "error": delivery.last_error}


@api.get("/alert-rules/{rule_id}/deliveries", responses={**MEMBER_ERRORS, 404: PROBLEM})
async def rule_deliveries(rule_id: RuleId, caller: MemberDep, team: TeamDep) -> list[dict[str, Any]]:
    """The rule's latest deliveries, newest first, with attempts and outcome."""
    rule = await run_in_threadpool(owned_rule, team, caller, rule_id)
    found = await run_in_threadpool(alert_rules.deliveries, team.store, rule.id)
    return [_delivery_json(d) for d in found]


@api.post("/alert-rules/{rule_id}/test", responses={**MEMBER_ERRORS, 404: PROBLEM})
async def test_alert_rule(rule_id: RuleId, caller: MemberDep, team: TeamDep) -> dict[str, Any]:
    """Send a test alert now (retried like a real one) and return the delivery record."""
    rule = await run_in_threadpool(owned_rule, team, caller, rule_id)
    return _delivery_json(await run_in_threadpool(team.notifier.send_test, rule))




@api.post("/evaluation-codes", status_code=202, responses={422: PROBLEM})
async def request_evaluation_code(body: CodeRequestIn, caller: CallerDep, team: TeamDep) -> dict[str, Any]:
    """Ask for an evaluation code (50 diagnoses a day for 14 days); an admin approves it and sends it."""
    request_id = await run_in_threadpool(request_code, team, caller, body.organisation, body.email)
    return {"id": request_id, "status": "requested"}




@api.get("/me", responses=MEMBER_ERRORS)
async def me(caller: CallerDep, team: TeamDep) -> dict[str, Any]:
    """Who the caller is, their daily limit and what is left of it today."""
    return await run_in_threadpool(me_json, team, caller)


@meta.get("/readyz")
async def readyz(team: TeamDep) -> JSONResponse:
    """200 when the database (and Redis, when configured) answer; 503 otherwise."""
    checks = await run_in_threadpool(team.ready)
    ok = all(checks.values())
    return JSONResponse({"status": "ready" if ok else "not ready", **checks}, status_code=200 if ok else 503)


@meta.get("/metrics", include_in_schema=False)
async def metrics() -> Response:
    body, content_type = exposition()
    return Response(body, media_type=content_type)

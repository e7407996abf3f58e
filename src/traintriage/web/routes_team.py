"""The team service's routes: history, alert rules, follow-up questions, evaluation-code
requests, who-am-I, sign-in, /readyz and /metrics. Thin: every decision is in `service/`.

`install(app)` adds these routes, the quota/metrics middleware, and makes the diagnoses the
app stores belong to their caller (a result stays readable by whoever has its link).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Query
from fastapi import Path as FastApiPath
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from traintriage.service import alert_rules, followup, history, identity
from traintriage.service.alert_rules import RuleError, RuleSpec
from traintriage.service.identity import Caller, IdentityError
from traintriage.service.logs import configure_logging
from traintriage.service.sessions import SESSION_LIFETIME, session_value
from traintriage.web.links import Links
from traintriage.web.problems import PROBLEM_JSON, Problem
from traintriage.web.rendering import render
from traintriage.web.security import CSRF_FIELD, check_csrf, csrf_token, remember_csrf
from traintriage.web.storage import current_owner
from traintriage.web.team_context import SESSION_COOKIE, Team, caller_of, team_of
from traintriage.web.team_metrics import exposition
from traintriage.web.team_middleware import TeamMiddleware

api = APIRouter(prefix="/api/v1", tags=["team"])
pages = APIRouter(include_in_schema=False)
meta = APIRouter(tags=["meta"])
PROBLEM = {"description": "Problem details (RFC 9457)", "content": {PROBLEM_JSON: {"schema": {"type": "object"}}}}
MEMBER_ERRORS: dict[int | str, dict[str, Any]] = {401: PROBLEM}


class Unauthorized(Problem):
    @property
    def title(self) -> str:
        return "Unauthorized"


def install(app: FastAPI) -> None:
    """Wire the team service into the web app (called once from `create_app`)."""
    configure_logging()
    app.add_middleware(TeamMiddleware)
    app.dependency_overrides[current_owner] = owner_for_saving
    for router in (api, pages, meta):
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


def _team(request: Request) -> Team:
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
TeamDep = Annotated[Team, Depends(_team)]


# --- API ---------------------------------------------------------------------------------


class QuestionIn(BaseModel):
    question: str = Field(min_length=1, max_length=followup.MAX_QUESTION)


class CodeRequestIn(BaseModel):
    organisation: str = Field(min_length=1, max_length=200)
    email: str = Field(min_length=3, max_length=320)


def _since(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise Problem(422, "'since' must be a date or time like 2026-12-01 or 2026-12-01T08:00:00Z") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


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
                                    category=category, since=_since(since), query=q, limit=limit, offset=offset)
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


def _owned_rule(team: Team, caller: Caller, rule_id: int) -> Any:
    assert caller.owner is not None
    rule = alert_rules.get_rule(team.store, caller.owner, rule_id)
    if rule is None:
        raise Problem(404, f"no alert rule {rule_id}")
    return rule


def _delivery_json(delivery: Any) -> dict[str, Any]:
    return {"id": delivery.id, "created_at": delivery.created_at.isoformat(), "test": delivery.test,
            "diagnosis_id": delivery.diagnosis_id, "fingerprint": delivery.fingerprint, "status": delivery.status,
            "attempts": delivery.attempts, "response_code": delivery.response_code, "error": delivery.last_error}


@api.get("/alert-rules/{rule_id}/deliveries", responses={**MEMBER_ERRORS, 404: PROBLEM})
async def rule_deliveries(rule_id: RuleId, caller: MemberDep, team: TeamDep) -> list[dict[str, Any]]:
    """The rule's latest deliveries, newest first, with attempts and outcome."""
    rule = await run_in_threadpool(_owned_rule, team, caller, rule_id)
    found = await run_in_threadpool(alert_rules.deliveries, team.store, rule.id)
    return [_delivery_json(d) for d in found]


@api.post("/alert-rules/{rule_id}/test", responses={**MEMBER_ERRORS, 404: PROBLEM})
async def test_alert_rule(rule_id: RuleId, caller: MemberDep, team: TeamDep) -> dict[str, Any]:
    """Send a test alert now (retried like a real one) and return the delivery record."""
    rule = await run_in_threadpool(_owned_rule, team, caller, rule_id)
    return _delivery_json(await run_in_threadpool(team.notifier.send_test, rule))


def _request_code(team: Team, caller: Caller, organisation: str, email: str) -> int:
    allowance = team.quotas.take(f"code-request:{caller.subject}", 5)
    if not allowance.allowed:
        raise Problem(422, "too many evaluation code requests from here today; try again tomorrow")
    try:
        return identity.request_code(team.store, organisation, email)
    except ValueError as exc:
        raise Problem(422, str(exc)) from exc


@api.post("/evaluation-codes", status_code=202, responses={422: PROBLEM})
async def request_evaluation_code(body: CodeRequestIn, caller: CallerDep, team: TeamDep) -> dict[str, Any]:
    """Ask for an evaluation code (50 diagnoses a day for 14 days); an admin approves it and sends it."""
    request_id = await run_in_threadpool(_request_code, team, caller, body.organisation, body.email)
    return {"id": request_id, "status": "requested"}


def _me(team: Team, caller: Caller) -> dict[str, Any]:
    allowance = team.quotas.peek(caller.subject, caller.daily_limit)
    return {"kind": caller.kind, "name": caller.name, "daily_limit": caller.daily_limit, "used_today": allowance.used,
            "remaining_today": allowance.remaining, "resets_at": allowance.resets_at.isoformat(),
            "expires_at": caller.expires_at.isoformat() if caller.expires_at else None}


@api.get("/me", responses=MEMBER_ERRORS)
async def me(caller: CallerDep, team: TeamDep) -> dict[str, Any]:
    """Who the caller is, their daily limit and what is left of it today."""
    return await run_in_threadpool(_me, team, caller)


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


# --- pages -------------------------------------------------------------------------------


def _page(request: Request, template: str, status: int = 200, **context: Any) -> Response:
    token, new = csrf_token(request)
    response = HTMLResponse(render(template, Links(), csrf=token, csrf_field=CSRF_FIELD, **context),
                            status_code=status)
    if new:
        remember_csrf(response, token, request)
    return response


async def _form(request: Request) -> dict[str, str]:
    form = await request.form()
    check_csrf(request, str(form.get(CSRF_FIELD, "")))
    return {k: v for k, v in form.items() if isinstance(v, str)}


async def _page_caller(request: Request) -> Caller | None:
    """The caller of a page, or None when the session names a key or code that stopped working."""
    try:
        return await run_in_threadpool(caller_of, request)
    except IdentityError:
        return None


@pages.get("/account", response_class=HTMLResponse)
async def account_page(request: Request, team: TeamDep) -> Response:
    caller = await _page_caller(request)
    info = await run_in_threadpool(_me, team, caller) if caller else None
    return _page(request, "team_account.html", caller=caller, info=info)


@pages.get("/sign-in", response_class=HTMLResponse)
async def sign_in_page(request: Request) -> Response:
    return _page(request, "team_signin.html", error=None)


@pages.post("/sign-in")
async def sign_in(request: Request, team: TeamDep) -> Response:
    form = await _form(request)
    try:
        caller = await run_in_threadpool(identity.caller_for_token, team.store, form.get("token", ""))
    except IdentityError as exc:
        return _page(request, "team_signin.html", status=401, error=str(exc))
    value = await run_in_threadpool(session_value, team.store, caller.subject, team.store.clock())
    response = RedirectResponse("/account", status_code=303)
    response.set_cookie(SESSION_COOKIE, value, max_age=int(SESSION_LIFETIME.total_seconds()), httponly=True,
                        samesite="lax", secure=request.url.scheme == "https", path="/")
    return response


@pages.post("/sign-out")
async def sign_out(request: Request) -> Response:
    await _form(request)
    response = RedirectResponse("/account", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


async def _page_member(request: Request) -> Caller:
    caller = await _page_caller(request)
    if caller is None or caller.owner is None:
        raise Unauthorized(401, "sign in with an API key or evaluation code first (at /sign-in)")
    return caller


@pages.get("/history", response_class=HTMLResponse)
async def history_page(request: Request, team: TeamDep, q: str = "", category: str = "", since: str = "",
                       failure_class: Annotated[str, Query(alias="class")] = "") -> Response:
    caller = await _page_member(request)
    assert caller.owner is not None
    items = await run_in_threadpool(history.list_history, team.store, caller.owner, failure_class=failure_class or None,
                                    category=category or None, since=_since(since), query=q[:500] or None, limit=200)
    return _page(request, "team_history.html", caller=caller, items=items,
                 filters={"q": q, "category": category, "since": since, "class": failure_class})


@pages.post("/history/delete")
async def history_delete(request: Request, team: TeamDep) -> Response:
    caller = await _page_member(request)
    assert caller.owner is not None
    form = await _form(request)
    if form.get("all") == "yes":
        await run_in_threadpool(history.delete_all, team.store, caller.owner)
    elif form.get("id"):
        await run_in_threadpool(history.delete_one, team.store, caller.owner, form["id"])
    return RedirectResponse("/history", status_code=303)


@pages.get("/alerts", response_class=HTMLResponse)
async def alerts_page(request: Request, team: TeamDep) -> Response:
    caller = await _page_member(request)
    assert caller.owner is not None
    rules = await run_in_threadpool(alert_rules.list_rules, team.store, caller.owner)
    return _page(request, "team_alerts.html", caller=caller, rules=rules, error=None, created=None)


@pages.post("/alerts")
async def alerts_create(request: Request, team: TeamDep) -> Response:
    caller = await _page_member(request)
    assert caller.owner is not None
    form = await _form(request)
    target = form.get("target", "")
    spec = RuleSpec(name=form.get("name", ""), match_field=form.get("field", ""), match_value=form.get("value", ""),
                    webhook_url=target if "://" in target else None, email=None if "://" in target else target or None,
                    webhook_format=form.get("format", "json"),
                    window_seconds=int(form["window"]) if form.get("window", "").isdigit() else 3600)
    try:
        rule = await run_in_threadpool(alert_rules.create_rule, team.store, caller.owner, spec)
    except RuleError as exc:
        rules = await run_in_threadpool(alert_rules.list_rules, team.store, caller.owner)
        return _page(request, "team_alerts.html", status=422, caller=caller, rules=rules, error=str(exc), created=None)
    rules = await run_in_threadpool(alert_rules.list_rules, team.store, caller.owner)
    return _page(request, "team_alerts.html", status=201, caller=caller, rules=rules, error=None, created=rule)


@pages.get("/alerts/{rule_id}", response_class=HTMLResponse)
async def alert_page(rule_id: RuleId, request: Request, team: TeamDep) -> Response:
    caller = await _page_member(request)
    rule = await run_in_threadpool(_owned_rule, team, caller, rule_id)
    found = await run_in_threadpool(alert_rules.deliveries, team.store, rule.id)
    return _page(request, "team_alert.html", caller=caller, rule=rule, deliveries=found)


@pages.post("/alerts/{rule_id}/test")
async def alert_test(rule_id: RuleId, request: Request, team: TeamDep) -> Response:
    caller = await _page_member(request)
    await _form(request)
    rule = await run_in_threadpool(_owned_rule, team, caller, rule_id)
    await run_in_threadpool(team.notifier.send_test, rule)
    return RedirectResponse(f"/alerts/{rule_id}", status_code=303)


@pages.post("/alerts/{rule_id}/delete")
async def alert_delete(rule_id: RuleId, request: Request, team: TeamDep) -> Response:
    caller = await _page_member(request)
    assert caller.owner is not None
    await _form(request)
    await run_in_threadpool(alert_rules.delete_rule, team.store, caller.owner, rule_id)
    return RedirectResponse("/alerts", status_code=303)


@pages.get("/evaluation-code", response_class=HTMLResponse)
async def code_form(request: Request) -> Response:
    return _page(request, "team_code.html", error=None, done=None, form={})


@pages.post("/evaluation-code")
async def code_request(request: Request, team: TeamDep) -> Response:
    form = await _form(request)
    caller = await _page_caller(request)
    if caller is None:  # a session that stopped working: count the request against the address
        caller = await run_in_threadpool(team.caller, _anonymous_view(request))
    try:
        request_id = await run_in_threadpool(_request_code, team, caller, form.get("organisation", ""),
                                             form.get("email", ""))
    except Problem as exc:
        return _page(request, "team_code.html", status=422, error=exc.detail, done=None, form=form)
    return _page(request, "team_code.html", error=None, done=request_id, form={})


def _anonymous_view(request: Request) -> Request:
    """The request without its session cookie or key (to name an anonymous requester)."""
    scope = dict(request.scope)
    scope["headers"] = [(k, v) for k, v in request.scope["headers"] if k not in (b"cookie", b"authorization")]
    scope["state"] = {}
    return Request(scope)


@pages.get("/d/{diagnosis_id}/ask", response_class=HTMLResponse)
async def ask_page(diagnosis_id: str, request: Request, team: TeamDep, q: str = "") -> Response:
    """The result page's question box posts here (GET: nothing changes, so no CSRF token needed)."""
    document = await run_in_threadpool(team.store.get_diagnosis, diagnosis_id)
    if document is None:
        raise Problem(404, "no such result (results are kept by their link only)")
    result = None
    error = None
    if q.strip():
        try:
            result = await run_in_threadpool(followup.answer, document, q)
        except followup.QuestionError as exc:
            error = str(exc)
    root = document.get("root_cause") or {}
    return _page(request, "team_answer.html", id=diagnosis_id, question=q, result=result, error=error,
                 title=root.get("title") if isinstance(root, dict) else None)

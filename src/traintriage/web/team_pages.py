"""The team service's pages: account, sign-in and out, history, alert rules, evaluation-code
requests and follow-up questions. Forms post and redirect (CSRF-checked), no script needed."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from traintriage.service import alert_rules, followup, history, identity
from traintriage.service.alert_rules import RuleError, RuleSpec
from traintriage.service.identity import Caller, IdentityError
from traintriage.service.sessions import SESSION_LIFETIME, session_value
from traintriage.web.links import Links
from traintriage.web.problems import Problem
from traintriage.web.rendering import render
from traintriage.web.security import CSRF_FIELD, check_csrf, csrf_token, remember_csrf
from traintriage.web.team_context import SESSION_COOKIE, caller_of
from traintriage.web.team_deps import (
    RuleId,
    TeamDep,
    Unauthorized,
    me_json,
    owned_rule,
    request_code,
    since_date,
)

router = APIRouter(include_in_schema=False)


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


@router.get("/account", response_class=HTMLResponse)
async def account_page(request: Request, team: TeamDep) -> Response:
    caller = await _page_caller(request)
    info = await run_in_threadpool(me_json, team, caller) if caller else None
    return _page(request, "team_account.html", caller=caller, info=info)


@router.get("/sign-in", response_class=HTMLResponse)
async def sign_in_page(request: Request) -> Response:
    return _page(request, "team_signin.html", error=None)


@router.post("/sign-in")
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


@router.post("/sign-out")
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


@router.get("/history", response_class=HTMLResponse)
async def history_page(request: Request, team: TeamDep, q: str = "", category: str = "", since: str = "",
                       failure_class: Annotated[str, Query(alias="class")] = "") -> Response:
    caller = await _page_member(request)
    assert caller.owner is not None
    items = await run_in_threadpool(history.list_history, team.store, caller.owner, failure_class=failure_class or None,
                                    category=category or None, since=since_date(since), query=q[:500] or None, limit=200)
    return _page(request, "team_history.html", caller=caller, items=items,
                 filters={"q": q, "category": category, "since": since, "class": failure_class})


@router.post("/history/delete")
async def history_delete(request: Request, team: TeamDep) -> Response:
    caller = await _page_member(request)
    assert caller.owner is not None
    form = await _form(request)
    if form.get("all") == "yes":
        await run_in_threadpool(history.delete_all, team.store, caller.owner)
    elif form.get("id"):
        await run_in_threadpool(history.delete_one, team.store, caller.owner, form["id"])
    return RedirectResponse("/history", status_code=303)


@router.get("/alerts", response_class=HTMLResponse)
async def alerts_page(request: Request, team: TeamDep) -> Response:
    caller = await _page_member(request)
    assert caller.owner is not None
    rules = await run_in_threadpool(alert_rules.list_rules, team.store, caller.owner)
    return _page(request, "team_alerts.html", caller=caller, rules=rules, error=None, created=None)


@router.post("/alerts")
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


@router.get("/alerts/{rule_id}", response_class=HTMLResponse)
async def alert_page(rule_id: RuleId, request: Request, team: TeamDep) -> Response:
    caller = await _page_member(request)
    rule = await run_in_threadpool(owned_rule, team, caller, rule_id)
    found = await run_in_threadpool(alert_rules.deliveries, team.store, rule.id)
    return _page(request, "team_alert.html", caller=caller, rule=rule, deliveries=found)


@router.post("/alerts/{rule_id}/test")
async def alert_test(rule_id: RuleId, request: Request, team: TeamDep) -> Response:
    caller = await _page_member(request)
    await _form(request)
    rule = await run_in_threadpool(owned_rule, team, caller, rule_id)
    await run_in_threadpool(team.notifier.send_test, rule)
    return RedirectResponse(f"/alerts/{rule_id}", status_code=303)


@router.post("/alerts/{rule_id}/delete")
async def alert_delete(rule_id: RuleId, request: Request, team: TeamDep) -> Response:
    caller = await _page_member(request)
    assert caller.owner is not None
    await _form(request)
    await run_in_threadpool(alert_rules.delete_rule, team.store, caller.owner, rule_id)
    return RedirectResponse("/alerts", status_code=303)


@router.get("/evaluation-code", response_class=HTMLResponse)
async def code_form(request: Request) -> Response:
    return _page(request, "team_code.html", error=None, done=None, form={})


@router.post("/evaluation-code")
async def code_request(request: Request, team: TeamDep) -> Response:
    form = await _form(request)
    caller = await _page_caller(request)
    if caller is None:  # a session that stopped working: count the request against the address
        caller = await run_in_threadpool(team.caller, _anonymous_view(request))
    try:
        request_id = await run_in_threadpool(request_code, team, caller, form.get("organisation", ""),
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


@router.get("/d/{diagnosis_id}/ask", response_class=HTMLResponse)
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

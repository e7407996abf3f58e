# One venv, created on first use; every target works on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SAMPLE := src/traintriage/data/sample/job-4412.log
DEV_CORPORA := ../shared/corpus/gh-dev ../shared/corpus/realruns-dev
# corpus/: real logs collected for issue 15, split by a hash of the case id. Tune on *-tune;
# *-score is only ever scored (its misses are never printed), our estimate on unseen logs.
TUNE_CORPORA := corpus/threads-tune corpus/forums-tune corpus/forums2-tune corpus/threads2-tune corpus/unknown2-tune corpus/threads3-tune corpus/forums3-tune corpus/ranks3-tune corpus/threads4-tune corpus/forums4-tune corpus/cluster4-tune corpus/blind5-tune corpus/blind6-tune corpus/blind7-tune corpus/blind8-tune corpus/blind9-tune corpus/blind10-tune corpus/blind11-tune corpus/blind12-tune corpus/blind13-tune corpus/blind14-tune corpus/blind15-tune corpus/blind16-tune corpus/blind17-tune corpus/blind18-tune corpus/blind19-tune corpus/blind20-tune corpus/blind21-tune corpus/blind22-tune corpus/blind23-tune corpus/blind24-tune corpus/blind25-tune corpus/blind26-tune corpus/blind27-tune corpus/blind28-tune corpus/blind29-tune corpus/blind30-tune corpus/blind31-tune corpus/blind32-tune corpus/blind33-tune corpus/blind34-tune corpus/blind35-tune corpus/blind36-tune corpus/blind37-tune corpus/blind38-tune corpus/blind39-tune corpus/blind40-tune corpus/blind41-tune corpus/blind42-tune corpus/blind43-tune corpus/blind44-tune corpus/blind45-tune corpus/blind46-tune corpus/blind47-tune corpus/blind48-tune corpus/blind49-tune corpus/blind50-tune corpus/blind51-tune corpus/blind52-tune corpus/blind53-tune corpus/blind54-tune corpus/realruns52-tune corpus/realruns53-tune corpus/realruns54-tune corpus/realruns55-tune corpus/blind55-tune corpus/realruns56-tune corpus/blind56-tune corpus/blind57-tune corpus/realruns57-tune corpus/realruns58-tune corpus/blind58-tune corpus/realruns59-tune corpus/realruns60-tune corpus/realruns61-tune corpus/realruns62-tune corpus/realruns63-tune corpus/blind59-tune corpus/blind60-tune corpus/realruns64-tune corpus/blind61-tune corpus/realruns65-tune corpus/realruns66-tune corpus/realruns67-tune corpus/realruns68-tune corpus/blind62-tune corpus/blind63-tune corpus/realruns69-tune corpus/realruns70-tune corpus/blind64-tune corpus/realruns71-tune corpus/blind65-tune corpus/realruns72-tune corpus/blind66-tune corpus/realruns73-tune corpus/realruns74-tune corpus/blind67-tune corpus/blind68-tune corpus/realruns75-tune corpus/blind69-tune corpus/realruns76-tune corpus/realruns77-tune corpus/realruns78-tune corpus/blind70-tune corpus/blind71-tune corpus/realruns79-tune corpus/realruns80-tune corpus/realruns81-tune corpus/realruns82-tune corpus/blind72-tune corpus/realruns83-tune corpus/realruns84-tune corpus/blind73-tune corpus/blind74-tune corpus/realruns85-tune corpus/realruns86-tune corpus/blind75-tune corpus/realruns87-tune corpus/blind76-tune corpus/blind77-tune corpus/realruns88-tune corpus/blind78-tune corpus/realruns89-tune corpus/realruns90-tune corpus/blind79-tune corpus/realruns91-tune corpus/blind80-tune corpus/realruns92-tune corpus/blind81-tune corpus/realruns93-tune corpus/blind82-tune corpus/blind83-tune corpus/realruns94-tune corpus/blind84-tune corpus/blind85-tune corpus/realruns95-tune corpus/blind86-tune corpus/realruns96-tune corpus/blind87-tune corpus/realruns97-tune corpus/blind88-tune corpus/realruns98-tune corpus/blind89-tune corpus/realruns99-tune corpus/blind90-tune corpus/blind91-tune corpus/realruns100-tune corpus/blind92-tune corpus/realruns101-tune corpus/blind93-tune corpus/realruns102-tune corpus/blind94-tune corpus/realruns103-tune corpus/blind95-tune corpus/realruns104-tune corpus/blind96-tune corpus/realruns105-tune corpus/blind97-tune corpus/realruns106-tune corpus/realruns107-tune corpus/realruns109-tune corpus/blind98-tune corpus/realruns108-tune corpus/blind99-tune corpus/realruns110-tune corpus/realruns111-tune corpus/realruns112-tune corpus/realruns113-tune corpus/realruns114-tune corpus/realruns115-tune corpus/blind100-tune corpus/realruns116-tune corpus/realruns117-tune corpus/blind101-tune corpus/realruns118-tune corpus/blind102-tune corpus/realruns119-tune corpus/blind103-tune corpus/blind104-tune corpus/realruns120-tune corpus/blind105-tune corpus/realruns121-tune corpus/realruns123-tune corpus/blind106-tune corpus/realruns122-tune corpus/blind107-tune corpus/realruns124-tune corpus/blind108-tune corpus/blind109-tune corpus/blind110-tune corpus/realruns125-tune corpus/realruns126-tune corpus/blind111-tune corpus/realruns127-tune corpus/blind112-tune corpus/realruns128-tune corpus/blind113-tune corpus/realruns129-tune corpus/blind114-tune corpus/realruns130-tune corpus/blind115-tune corpus/blind116-tune corpus/realruns131-tune corpus/realruns132-tune corpus/blind117-tune corpus/realruns133-tune corpus/blind118-tune corpus/blind119-tune corpus/realruns134-tune corpus/blind120-tune corpus/blind121-tune corpus/realruns135-tune corpus/realruns136-tune corpus/realruns137-tune corpus/realruns138-tune corpus/blind122-tune corpus/blind123-tune corpus/blind124-tune corpus/blind125-tune corpus/realruns139-tune corpus/realruns140-tune corpus/blind126-tune corpus/realruns141-tune corpus/realruns142-tune corpus/blind127-tune corpus/realruns143-tune corpus/realruns144-tune corpus/realruns145-tune corpus/blind128-tune corpus/realruns146-tune corpus/realruns147-tune corpus/realruns148-tune corpus/realruns149-tune corpus/realruns150-tune corpus/realruns151-tune corpus/realruns152-tune corpus/realruns153-tune corpus/blind129-tune
SCORE_CORPORA := corpus/threads-score corpus/forums-score corpus/unknown-score corpus/forums2-score corpus/threads2-score corpus/unknown2-score corpus/threads3-score corpus/forums3-score corpus/ranks3-score corpus/threads4-score corpus/forums4-score corpus/cluster4-score corpus/blind5-score corpus/blind6-score corpus/blind7-score corpus/blind8-score corpus/blind9-score corpus/blind10-score corpus/blind11-score corpus/blind12-score corpus/blind13-score corpus/blind14-score corpus/blind15-score corpus/blind16-score corpus/blind17-score corpus/blind18-score corpus/blind19-score corpus/blind20-score corpus/blind21-score corpus/blind22-score corpus/blind23-score corpus/blind24-score corpus/blind25-score corpus/blind26-score corpus/blind27-score corpus/blind28-score corpus/blind29-score corpus/blind30-score corpus/blind31-score corpus/blind32-score corpus/blind33-score corpus/blind34-score corpus/blind35-score corpus/blind36-score corpus/blind37-score corpus/blind38-score corpus/blind39-score corpus/blind40-score corpus/blind41-score corpus/blind42-score corpus/blind43-score corpus/blind44-score corpus/blind45-score corpus/blind46-score corpus/blind47-score corpus/blind48-score corpus/blind49-score corpus/blind50-score corpus/blind51-score corpus/blind52-score corpus/blind53-score corpus/blind54-score corpus/realruns52-score corpus/realruns53-score corpus/realruns54-score corpus/realruns55-score corpus/blind55-score corpus/realruns56-score corpus/blind56-score corpus/blind57-score corpus/realruns57-score corpus/realruns58-score corpus/blind58-score corpus/realruns59-score corpus/realruns60-score corpus/realruns61-score corpus/realruns62-score corpus/realruns63-score corpus/blind59-score corpus/blind60-score corpus/realruns64-score corpus/blind61-score corpus/realruns65-score corpus/realruns66-score corpus/realruns67-score corpus/realruns68-score corpus/blind62-score corpus/blind63-score corpus/realruns69-score corpus/realruns70-score corpus/blind64-score corpus/realruns71-score corpus/blind65-score corpus/realruns72-score corpus/blind66-score corpus/realruns73-score corpus/realruns74-score corpus/blind67-score corpus/blind68-score corpus/realruns75-score corpus/blind69-score corpus/realruns76-score corpus/realruns77-score corpus/realruns78-score corpus/blind70-score corpus/blind71-score corpus/realruns79-score corpus/realruns80-score corpus/realruns81-score corpus/realruns82-score corpus/blind72-score corpus/realruns83-score corpus/realruns84-score corpus/blind73-score corpus/blind74-score corpus/realruns85-score corpus/realruns86-score corpus/blind75-score corpus/realruns87-score corpus/blind76-score corpus/blind77-score corpus/realruns88-score corpus/blind78-score corpus/realruns89-score corpus/realruns90-score corpus/blind79-score corpus/realruns91-score corpus/blind80-score corpus/realruns92-score corpus/blind81-score corpus/realruns93-score corpus/blind82-score corpus/blind83-score corpus/realruns94-score corpus/blind84-score corpus/blind85-score corpus/realruns95-score corpus/blind86-score corpus/realruns96-score corpus/blind87-score corpus/realruns97-score corpus/blind88-score corpus/realruns98-score corpus/blind89-score corpus/realruns99-score corpus/blind90-score corpus/blind91-score corpus/realruns100-score corpus/blind92-score corpus/realruns101-score corpus/blind93-score corpus/realruns102-score corpus/blind94-score corpus/realruns103-score corpus/blind95-score corpus/realruns104-score corpus/blind96-score corpus/realruns105-score corpus/blind97-score corpus/realruns106-score corpus/realruns107-score corpus/realruns109-score corpus/blind98-score corpus/realruns108-score corpus/blind99-score corpus/realruns110-score corpus/realruns111-score corpus/realruns112-score corpus/realruns113-score corpus/realruns114-score corpus/realruns115-score corpus/blind100-score corpus/realruns116-score corpus/realruns117-score corpus/blind101-score corpus/realruns118-score corpus/blind102-score corpus/realruns119-score corpus/blind103-score corpus/blind104-score corpus/realruns120-score corpus/blind105-score corpus/realruns121-score corpus/realruns123-score corpus/blind106-score corpus/realruns122-score corpus/blind107-score corpus/realruns124-score corpus/blind108-score corpus/blind109-score corpus/blind110-score corpus/realruns125-score corpus/realruns126-score corpus/blind111-score corpus/realruns127-score corpus/blind112-score corpus/realruns128-score corpus/blind113-score corpus/realruns129-score corpus/blind114-score corpus/realruns130-score corpus/blind115-score corpus/blind116-score corpus/realruns131-score corpus/realruns132-score corpus/blind117-score corpus/realruns133-score corpus/blind118-score corpus/blind119-score corpus/realruns134-score corpus/blind120-score corpus/blind121-score corpus/realruns135-score corpus/realruns136-score corpus/realruns137-score corpus/realruns138-score corpus/blind122-score corpus/blind123-score corpus/blind124-score corpus/blind125-score corpus/realruns139-score corpus/realruns140-score corpus/blind126-score corpus/realruns141-score corpus/realruns142-score corpus/blind127-score corpus/realruns143-score corpus/realruns144-score corpus/realruns145-score corpus/blind128-score corpus/realruns146-score corpus/realruns147-score corpus/realruns148-score corpus/realruns149-score corpus/realruns150-score corpus/realruns151-score corpus/realruns152-score corpus/realruns153-score corpus/blind129-score
EVAL := $(BIN)/python ../shared/corpus/eval.py --tool "$(BIN)/traintriage"

.PHONY: run serve test lint typecheck unit fuzz eval eval-fast calibration bench bench-patterns bench-instructions clean

# An editable install leaves the package without bytecode (and this machine sets PYTHONDONTWRITEBYTECODE), so
# every start would compile ~70 modules from source, more than half of a small log's CLI time; a wheel install
# compiles them, as this does. Python checks each .pyc against its source, so a stale one is never used.
BYTECODE := $(BIN)/python -m compileall -q src/traintriage

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BYTECODE)
	touch $(STAMP) $(VENV)/.installed-run

# `make run` installs only what the CLI needs; `make serve` adds the web app's extra.
define install_only
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '$(1)'
	$(BYTECODE)
	touch $@
endef

$(VENV)/.installed-run: pyproject.toml
	$(call install_only,.)

$(VENV)/.installed-serve: pyproject.toml
	$(call install_only,.[serve])

run: $(VENV)/.installed-run
	@$(BIN)/traintriage diagnose $(SAMPLE); status=$$?; [ $$status -le 2 ] || exit $$status

serve: $(VENV)/.installed-serve
	$(BIN)/traintriage serve

lint: $(STAMP)
	$(BIN)/ruff check src tests scripts benchmarks
	$(BIN)/traintriage kb lint

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -n 2 --dist loadgroup

test: lint typecheck unit

# The hostile-input properties (tests/robust) run a few examples in `make test`; here, many.
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -p no:xdist tests/robust

eval: $(STAMP)
	@echo "== development corpora (../shared/corpus)"; $(EVAL) --show-misses $(DEV_CORPORA)
	@echo "== new corpus, tuned part"; $(EVAL) --show-misses $(TUNE_CORPORA)
	@echo "== new corpus, scored part (never tuned on)"; $(EVAL) $(SCORE_CORPORA)

# The same corpora diagnosed in-process (a hundred times faster; `make eval` stays the reference).
eval-fast: $(STAMP)
	mkdir -p benchmarks/work
	$(BIN)/python scripts/eval_fast.py benchmarks/work/eval-fast.jsonl $(DEV_CORPORA) $(TUNE_CORPORA) $(SCORE_CORPORA)

# Fit the confidence map on the scored part of the new corpus, two-fold cross-fitted (the tuned parts are
# nearly always right and teach the map nothing); the report measures each half with the other half's map.
calibration: $(STAMP)
	$(BIN)/python benchmarks/calibration.py --crossfit $(SCORE_CORPORA)

bench: $(STAMP)
	$(BYTECODE)
	$(BIN)/python benchmarks/bench.py

bench-serve: $(STAMP)
	$(BYTECODE)
	$(BIN)/python benchmarks/bench_serve.py

bench-patterns: $(STAMP)
	$(BIN)/python benchmarks/pattern_cost.py

# The matcher's cost per byte in instructions (valgrind), against rg's: repeatable where seconds are not.
bench-instructions: $(STAMP)
	$(BIN)/python benchmarks/matcher_instructions.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache benchmarks/work

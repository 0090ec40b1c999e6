"""The command-line options made from the configurations' definitions (neardup.options.Option):
each has its definition's default and choices, the choices are the configuration's own tuples,
and a bad value is refused by the configuration, in one line naming the option, exit status 2."""

from __future__ import annotations

import argparse
import ast
import json
import pathlib

import pytest

from neardup import config, options
from neardup.cli import build_parser, main
from neardup.cli._common import option_error, option_value, url_rules_from
from neardup.errors import ConfigError
from neardup.hashing import HASH_NAMES
from neardup.io.read.reader import ON_ERROR
from neardup.io.write import RESULT_FORMATS
from neardup.params import FAMILIES, UNITS, MinHashParams, ShingleParams
from neardup.service.settings import LOG_LEVELS, SERVE_OPTIONS, SERVE_SETTINGS, ServerOptions, Settings
from neardup.stages.survivors import KEEP_POLICIES
from neardup.urls import DEFAULT_RULES, TRACKING_PARAMS, UrlRules

TABLES = (options.READ_OPTIONS, options.SHINGLE_OPTIONS, options.MINHASH_OPTIONS, options.DEDUP_OPTIONS,
          options.SOURCE_OPTIONS, options.URL_OPTIONS, options.RESULT_OPTIONS, options.INDEX_OPTIONS,
          options.REPORT_OPTIONS, SERVE_OPTIONS)
DEFINITIONS = {(o.owner, p): o for table in TABLES for o in table.values() for p in (o.parameter, *o.also)}
#: Options left out are None in every command: the URL rules' defaults, or those an index records.
GIVEN_ONLY = set(options.URL_OPTIONS.values())
#: ``neardup serve``'s own options show the defaults of the app's settings under it and the server's.
SERVE_DEFAULTS = {"settings": SERVE_SETTINGS, "server": ServerOptions()}

# (sub-command path, the configuration whose defaults the options show, that of the read options,
# whether the other options left out are None: an index's recorded values apply)
COMMANDS = [
    (("dedup",), {**vars(config.DedupConfig()), **vars(config.ResultOptions())}, config.ReadOptions(), False),
    (("plan",), {**vars(config.DedupConfig()), **vars(config.ResultOptions())}, config.ReadOptions(), False),
    (("changes",), config.DedupConfig(), config.ReadOptions(), False),
    (("report",), config.ReportConfig(), config.InputOptions(), False),
    (("compare",), {"shingle": ShingleParams(), "minhash": MinHashParams()}, None, False),
    (("evaluate",), None, config.ReadOptions(), False),
    (("index", "add"), config.INDEX_DEFAULTS, config.ReadOptions(), True),
    (("index", "query"), config.INDEX_DEFAULTS, config.ReadOptions(), True),
    (("serve",), config.INDEX_DEFAULTS, config.ReadOptions(), True),
]


def subparser(path):
    parser = build_parser()
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


@pytest.mark.parametrize("path, defaults, read_defaults, given_only", COMMANDS,
                         ids=lambda x: " ".join(x) if isinstance(x, tuple) else "")
def test_generated_options_have_their_definitions_defaults_and_choices(path, defaults, read_defaults, given_only):
    parser = subparser(path)
    flags = parser.get_default("option_flags")
    assert flags, f"neardup {' '.join(path)} has no generated options"
    actions = {flag: a for a in parser._actions for flag in a.option_strings}
    for key, flag in flags.items():
        option = DEFINITIONS[key]
        action = actions[flag]
        assert action.option_strings == list(option.flags)
        read = option.owner == "ReadOptions"
        serve = option in SERVE_OPTIONS.values()
        given = (given_only and not serve) or option in GIVEN_ONLY
        shown_in = SERVE_DEFAULTS if serve else defaults
        if option.kind is bool:
            assert action.const is True and action.default is (None if given else False)
        elif given and not read:
            assert action.default is None, flag
        else:
            assert action.default == option.default_in(read_defaults if read else shown_in), flag
        if "{default}" in option.help:
            shown = option.default_in(read_defaults if read else shown_in)
            if shown is not None:  # (None: the command says what it does instead)
                shown = f"{shown:g}" if isinstance(shown, float) else shown  # (30, not 30.0)
                assert f"default {shown}" in action.help or f"{shown} (default)" in action.help, (flag, action.help)
        assert action.choices is None  # the configuration checks the value, not argparse
        if option.choices:
            assert action.metavar == "{" + ",".join(option.choices) + "}"


def test_the_choices_are_the_configurations_tuples():
    assert options.READ_OPTIONS["html"].choices is config.HTML_MODES
    assert options.READ_OPTIONS["format"].choices is config.INPUT_FORMATS
    assert options.READ_OPTIONS["content"].choices is config.CONTENTS
    assert options.SHINGLE_OPTIONS["shingle.unit"].choices is UNITS
    assert options.SHINGLE_OPTIONS["shingle.hash"].choices is HASH_NAMES
    assert options.MINHASH_OPTIONS["minhash.family"].choices is FAMILIES
    assert options.DEDUP_OPTIONS["method"].choices is config.METHODS
    assert options.DEDUP_OPTIONS["measure"].choices is config.MEASURES
    assert options.DEDUP_OPTIONS["sample"].choices is config.SAMPLES
    assert options.INDEX_OPTIONS["profile"].choices == tuple(config.INDEX_PROFILES)
    assert SERVE_OPTIONS["server.log_level"].choices is LOG_LEVELS
    assert options.RESULT_OPTIONS["output_format"].choices is RESULT_FORMATS is config.RESULT_FORMATS
    assert config.KEEP_POLICIES is KEEP_POLICIES
    assert options.DEDUP_OPTIONS["keep"].help.startswith("survivor of each cluster: {default} (default), "
                                                         + ", ".join(KEEP_POLICIES[1:]) + ", field:NAME")


def test_no_choice_tuple_is_written_again_in_the_commands():
    """The commands take their choices from the definitions: no two neighbouring values of a
    configuration's tuple appear in their source."""
    sources = {p.name: p.read_text() for p in pathlib.Path(config.__file__).parent.joinpath("cli").glob("*.py")}
    for choices in (config.HTML_MODES, config.CONTENTS, config.METHODS, config.MEASURES, config.SAMPLES, UNITS,
                    FAMILIES, HASH_NAMES, config.INPUT_FORMATS[4:], tuple(config.INDEX_PROFILES), ON_ERROR,
                    RESULT_FORMATS, KEEP_POLICIES, LOG_LEVELS):
        for quote in ('"', "'"):
            pair = f"{quote}{choices[0]}{quote}, {quote}{choices[1]}{quote}"
            for name, text in sources.items():
                assert pair not in text, f"cli/{name} repeats the choices {choices}"


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": f"a few words of document {i} " * 3}) + "\n"
                            for i in range(5)))
    return str(path)


BAD = [
    (["dedup", "{in}", "-o", "{out}", "--num-perm", "0"], "--num-perm must be at least 1, got 0"),
    (["dedup", "{in}", "-o", "{out}", "--num-perm", "100000"], "--num-perm must be at most 65536, got 100000"),
    (["dedup", "{in}", "-o", "{out}", "-k", "0"], "-k must be at least 1, got 0"),
    (["dedup", "{in}", "-o", "{out}", "--unit", "byte"], "--unit must be one of 'word', 'char', 'line', got 'byte'"),
    (["dedup", "{in}", "-o", "{out}", "--shingle-hash", "crc"],
     "--shingle-hash must be one of 'xxh3', 'rabin40', 'rabin64', 'md5', 'sha1', got 'crc'"),
    (["dedup", "{in}", "-o", "{out}", "--seed", "-1"], "--seed must be at least 0, got -1"),
    (["dedup", "{in}", "-o", "{out}", "--family", "md5"],
     "--family must be one of 'affine61', 'mulshift64', 'mulshift32', got 'md5'"),
    (["dedup", "{in}", "-o", "{out}", "--threshold", "0"], "--threshold must be in (0, 1], got 0.0"),
    (["dedup", "{in}", "-o", "{out}", "--method", "fast"],
     "--method must be one of 'minhash', 'simhash', 'exact', 'broder', 'greedy', got 'fast'"),
    (["dedup", "{in}", "-o", "{out}", "--measure", "cosine"],
     "--measure must be one of 'jaccard', 'containment', got 'cosine'"),
    (["dedup", "{in}", "-o", "{out}", "--bands", "200"], "--bands must be at most 128, got 200"),
    (["dedup", "{in}", "-o", "{out}", "--rows", "0"], "--rows must be at least 1, got 0"),
    (["dedup", "{in}", "-o", "{out}", "--max-distance", "9"], "--max-distance must be at most 7, got 9"),
    (["dedup", "{in}", "-o", "{out}", "--sample-mod", "0"], "--sample-mod must be at least 1, got 0"),
    (["dedup", "{in}", "-o", "{out}", "--sample-cap", "1"], "--sample-cap must be at least 2, got 1"),
    (["dedup", "{in}", "-o", "{out}", "--sample", "all"], "--sample must be one of 'mod_m', 'min_s', got 'all'"),
    (["dedup", "{in}", "-o", "{out}", "--sample-size", "0"], "--sample-size must be at least 1, got 0"),
    (["dedup", "{in}", "-o", "{out}", "--format", "xml"],
     "--format must be one of 'auto', 'jsonl', 'parquet', 'arrow', 'csv', 'tsv', 'warc', 'html', 'text', got 'xml'"),
    (["dedup", "{in}", "-o", "{out}", "--html", "body"], "--html must be one of 'main', 'whole', 'article', got 'body'"),
    (["dedup", "{in}", "-o", "{out}", "--content", "pdf"], "--content must be one of 'text', 'html', got 'pdf'"),
    (["dedup", "{in}", "-o", "{out}", "--max-bytes", "0"], "--max-bytes must be at least 1, got 0"),
    (["dedup", "{in}", "-o", "{out}", "--id-field", ""], "--id-field must be a non-empty name, got ''"),
    (["dedup", "{in}", "-o", "{out}", "--output-format", "csv"],
     "--output-format must be one of 'jsonl', 'parquet', got 'csv'"),
    (["dedup", "{in}", "-o", "{out}", "--keep", "biggest"],
     "--keep must be first, longest, shortest, field:NAME or source:A,B,..., got 'biggest'"),
    (["dedup", "{in}", "-o", "{out}", "--keep", "field:"], "--keep must be field:NAME with a field name, got ''"),
    (["dedup", "{in}", "-o", "{out}", "--keep", "source:,"],
     "--keep must be source:A,B,... naming at least one source, got ()"),
    (["dedup", "{in}", "-o", "{out}", "--source-field", ""], "--source-field must be a non-empty name, got ''"),
    (["dedup", "{in}", "-o", "{out}", "--url-field", ""], "--url-field must be a non-empty name, got ''"),
    (["plan", "{in}", "--output-format", "csv"], "--output-format must be one of 'jsonl', 'parquet', got 'csv'"),
    (["plan", "{in}", "--keep", "field:"], "--keep must be field:NAME with a field name, got ''"),
    (["plan", "{in}", "--num-perm", "0"], "--num-perm must be at least 1, got 0"),
    (["changes", "{in}", "{in}", "-o", "{out}", "--threshold", "1.5"], "--threshold must be in (0, 1], got 1.5"),
    (["changes", "{in}", "{in}", "-o", "{out}", "--url-field", ""], "--url-field must be a non-empty name, got ''"),
    (["changes", "{in}", "{in}", "-o", "{out}", "--html", "body"],
     "--html must be one of 'main', 'whole', 'article', got 'body'"),
    (["report", "{in}", "-o", "{out}", "--boilerplate-fraction", "1"],
     "--boilerplate-fraction must be in [0, 1), got 1.0"),
    (["report", "{in}", "-o", "{out}", "--sample", "0"], "--sample must be at least 1, got 0"),
    (["report", "{in}", "-o", "{out}", "--runs", "0"], "--runs must be at least 1, got 0"),
    (["report", "{in}", "-o", "{out}", "--max-bytes", "0"], "--max-bytes must be at least 1, got 0"),
    (["report", "{in}", "-o", "{out}", "--seed", "-1"], "--seed must be at least 0, got -1"),
    (["compare", "a b c", "a b d", "--text", "-k", "0"], "-k must be at least 1, got 0"),
    (["evaluate", "{out}", "{in}", "--format", "xml"],
     "--format must be one of 'auto', 'jsonl', 'parquet', 'arrow', 'csv', 'tsv', 'warc', 'html', 'text', got 'xml'"),
    (["index", "add", "--db", "{db}", "{in}", "--threshold", "1"], "--threshold must be in (0, 1), got 1.0"),
    (["index", "add", "--db", "{db}", "{in}", "--containment-threshold", "0"],
     "--containment-threshold must be in (0, 1], got 0.0"),
    (["index", "add", "--db", "{db}", "{in}", "--mod-m", "0"], "--mod-m must be at least 1, got 0"),
    (["index", "add", "--db", "{db}", "{in}", "--max-distance", "40"], "--max-distance must be at most 31, got 40"),
    (["index", "add", "--db", "{db}", "{in}", "--profile", "tiny"],
     "--profile must be one of 'lean', 'default', 'full', got 'tiny'"),
    (["index", "add", "--db", "{db}", "{in}", "--num-perm", "0"], "--num-perm must be at least 1, got 0"),
    (["index", "add", "--db", "{db}", "{in}", "--seed", "-1"], "--seed must be at least 0, got -1"),
    (["index", "add", "--db", "{db}", "{in}", "--format", "xml"],
     "--format must be one of 'auto', 'jsonl', 'parquet', 'arrow', 'csv', 'tsv', 'warc', 'html', 'text', got 'xml'"),
    (["index", "add", "--db", "{db}", "{in}", "--url-field", ""], "--url-field must be a non-empty name, got ''"),
    (["index", "query", "--db", "{db}", "{in}", "--url-field", ""], "--url-field must be a non-empty name, got ''"),
    (["serve", "--db", "{db}", "--port", "70000"], "--port must be at most 65535, got 70000"),
    (["serve", "--db", "{db}", "--host", ""], "--host must be a non-empty name, got ''"),
    (["serve", "--db", "{db}", "--token-file", ""], "--token-file must be a non-empty name, got ''"),
    (["serve", "--db", "{db}", "--max-batch", "0"], "--max-batch must be at least 1, got 0"),
    (["serve", "--db", "{db}", "--max-body-bytes", "0"], "--max-body-bytes must be at least 1, got 0"),
    (["serve", "--db", "{db}", "--request-timeout", "0"], "--request-timeout must be in (0, inf), got 0.0"),
    (["serve", "--db", "{db}", "--header-timeout", "-1"], "--header-timeout must be in (0, inf), got -1.0"),
    (["serve", "--db", "{db}", "--limit-concurrency", "0"], "--limit-concurrency must be at least 1, got 0"),
    (["serve", "--db", "{db}", "--workers", "0"], "--workers must be at least 1, got 0"),
    (["serve", "--db", "{db}", "--batch-processes", "-1"], "--batch-processes must be at least 0, got -1"),
    (["serve", "--db", "{db}", "--log-level", "loud"],
     "--log-level must be one of 'critical', 'error', 'warning', 'info', 'debug', got 'loud'"),
    (["index", "query", "--db", "{db}", "{in}", "--html", "body"],
     "--html must be one of 'main', 'whole', 'article', got 'body'"),
]


@pytest.mark.parametrize("argv, message", BAD, ids=lambda x: " ".join(x[:1] + x[-2:]) if isinstance(x, list) else "")
def test_a_bad_value_is_one_line_naming_the_option(argv, message, corpus, tmp_path, capsys):
    out, db = tmp_path / "out", tmp_path / "index.db"
    args = [a.format(**{"in": corpus, "out": out, "db": db}) for a in argv]
    assert main(args) == 2
    assert capsys.readouterr().err == f"neardup: error: {message}\n"
    assert not out.exists() and not db.exists()  # refused before anything was written


# every command that makes options from the definitions, as it is run (its inputs: {in}, {out}, {db})
RUNS = {
    ("dedup",): ["dedup", "{in}", "-o", "{out}"],
    ("plan",): ["plan", "{in}"],
    ("changes",): ["changes", "{in}", "{in}", "-o", "{out}"],
    ("report",): ["report", "{in}", "-o", "{out}"],
    ("compare",): ["compare", "a b c", "a b d", "--text"],
    ("evaluate",): ["evaluate", "{out}", "{in}"],
    ("index", "add"): ["index", "add", "--db", "{db}", "{in}"],
    ("index", "query"): ["index", "query", "--db", "{db}", "{in}"],
    ("serve",): ["serve", "--db", "{db}"],
}


def refusals(path):
    """``(flag, bad value, the message's start)`` for every option that ``path`` makes from a
    definition and a configuration checks: a value outside every range and every choice."""
    flags = subparser(path).get_default("option_flags")
    for key, flag in flags.items():
        option = DEFINITIONS[key]
        if option is options.DEDUP_OPTIONS["keep"]:
            if key[1] == "keep":  # (once: keep_field and keep_sources are its fields too)
                yield flag, "nope", f"{flag} must be {config.KEEP_SYNTAX}, got 'nope'"
        elif option.choices:
            yield flag, "nope", f"{flag} must be one of {', '.join(map(repr, option.choices))}, got 'nope'"
        elif option.kind is int:  # every count, seed and distance is 0 or more
            yield flag, "-5", f"{flag} must be at least "
        elif option.kind is float:  # every threshold and fraction is in [0, 1]
            yield flag, "-0.5", f"{flag} must be in "
        elif option.kind is str:  # field names
            yield flag, "", f"{flag} must be a non-empty name, got ''"


@pytest.mark.parametrize("path", list(RUNS), ids=" ".join)
def test_every_checked_option_of_every_command_is_refused_in_one_line(path, corpus, tmp_path, capsys):
    checked = list(refusals(path))
    assert checked
    for flag, value, message in checked:
        out, db = tmp_path / "out", tmp_path / "index.db"
        argv = [a.format(**{"in": corpus, "out": out, "db": db}) for a in RUNS[path]]
        assert main([*argv, flag, value]) == 2, flag
        err = capsys.readouterr().err
        assert err.startswith(f"neardup: error: {message}") and err.count("\n") == 1, (flag, err)
        assert not out.exists() and not db.exists(), flag


def test_a_value_that_does_not_parse_is_argparses_usage_error(corpus, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["dedup", corpus, "-o", str(tmp_path / "out"), "--num-perm", "many"])
    assert stop.value.code == 2
    assert "--num-perm must be a whole number, got 'many'" in capsys.readouterr().err


def test_the_python_api_keeps_its_message_and_says_what_was_checked():
    with pytest.raises(ConfigError, match=r"^The 'num_perm' parameter of MinHashParams must be an int in the range "
                                          r"\[1, 65536\]\. Got 0 instead\.$") as caught:
        MinHashParams(num_perm=0)
    exc = caught.value
    assert (exc.owner, exc.parameter, exc.value, exc.requirement) == ("MinHashParams", "num_perm", 0, "at least 1")


def test_an_error_of_a_field_the_command_does_not_set_is_left_as_it_is():
    exc = ConfigError("The 'jobs' parameter of SeenIndex must be an int.", owner="SeenIndex", parameter="jobs",
                      value=0, requirement="at least 1")
    args = argparse.Namespace(option_flags={("MinHashParams", "num_perm"): "--num-perm"})
    assert option_error(exc, args) == str(exc)
    assert option_error(ConfigError("no input"), args) == "no input"


@pytest.mark.parametrize("keep, fields", [
    ("first", {"keep": "first"}), ("longest", {"keep": "longest"}), ("shortest", {"keep": "shortest"}),
    ("field:score", {"keep": "field", "keep_field": "score"}),
    ("source:b,a", {"keep": "source", "keep_sources": ("b", "a")}),
    ("source:b,,a,", {"keep": "source", "keep_sources": ("b", "a")}),
    ("biggest", {"keep": "biggest"}),  # (refused by the configuration, not by the parse)
])
def test_keep_parses_into_the_configurations_fields(keep, fields):
    assert config.keep_fields(keep) == fields


@pytest.mark.parametrize("argv, rules", [
    ([], DEFAULT_RULES),
    (["--drop-params", ""], UrlRules(drop_params=())),
    (["--drop-params", "a, B,,c*"], UrlRules(drop_params=("a", "b", "c*"))),
    (["--fold-www"], UrlRules(fold_www=True)),
    (["--fold-trailing-slash", "--drop-params", "x"], UrlRules(drop_params=("x",), fold_trailing_slash=True)),
])
@pytest.mark.parametrize("path", [("dedup",), ("changes",), ("index", "add")], ids=" ".join)
def test_the_url_rules_options_make_the_rules_their_class_checks(path, argv, rules):
    run = RUNS[path]
    args = build_parser().parse_args([a.format(**{"in": "x", "out": "o", "db": "d"}) for a in run] + argv)
    assert url_rules_from(args) == rules
    assert DEFAULT_RULES.drop_params == TRACKING_PARAMS


def test_the_url_rules_refuse_a_bad_value_in_the_one_message_format():
    with pytest.raises(ConfigError) as caught:
        UrlRules(fold_www="yes")
    assert (caught.value.owner, caught.value.parameter) == ("UrlRules", "fold_www")
    assert str(caught.value) == "The 'fold_www' parameter of UrlRules must be a bool. Got 'yes' instead."
    with pytest.raises(ConfigError) as caught:
        UrlRules(drop_params="utm_source")
    assert (caught.value.owner, caught.value.parameter) == ("UrlRules", "drop_params")


def test_output_format_is_checked_by_its_options_class_with_the_engines_message():
    assert config.check_result_format("parquet") == "parquet"
    with pytest.raises(ConfigError, match=r"^--output-format must be one of jsonl, parquet, got 'csv'$") as caught:
        config.ResultOptions(output_format="csv")
    assert (caught.value.owner, caught.value.parameter) == ("ResultOptions", "output_format")


def test_the_service_settings_check_what_the_command_line_checked_before():
    for name in ("max_body_bytes", "max_batch"):
        with pytest.raises(ConfigError) as caught:
            Settings(**{name: 0})
        assert (caught.value.owner, caught.value.parameter, caught.value.requirement) == ("create_app", name,
                                                                                          "at least 1")
    assert SERVE_SETTINGS == Settings(batch_processes=1)
    ServerOptions(port=0)  # (any free port)


def test_every_output_format_default_is_the_result_formats_default():
    """``output_format`` (every engine) and ``format`` (the result writers) default to the one
    definition, :data:`neardup.io.write.results.DEFAULT_RESULT_FORMAT`, not to a literal each."""
    assert config.ResultOptions().output_format == config.DEFAULT_RESULT_FORMAT == RESULT_FORMATS[0]
    defaults = {}
    for path in pathlib.Path(config.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args
            named = list(zip(args.args[len(args.args) - len(args.defaults):], args.defaults))
            named += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            for arg, default in named:
                if arg.arg == "output_format" or (arg.arg == "format" and path.name == "results.py"):
                    defaults[f"{path.name}:{node.name}({arg.arg})"] = ast.unparse(default)
    assert {"run.py:run(output_format)", "api.py:dedup_paths(output_format)", "engine.py:dedup_paths(output_format)",
            "results.py:write_clusters(format)", "results.py:write_pairs(format)"} <= set(defaults)
    assert {k: v for k, v in defaults.items() if v != "DEFAULT_RESULT_FORMAT"} == {}


def serve_fields(argv):
    """The :class:`ServerOptions` and :class:`Settings` fields that ``neardup serve ARGV`` sets."""
    args = build_parser().parse_args(["serve", "--db", "index.db", *argv])
    fields = {"server": {}, "settings": {}}
    for key, option in SERVE_OPTIONS.items():
        part, name = key.split(".")
        fields[part][name] = option_value(args, option)
    return fields


def test_every_serve_option_fills_its_configurations_field():
    left_out = serve_fields([])
    assert ServerOptions(**left_out["server"]) == ServerOptions()
    assert Settings(**left_out["settings"]) == SERVE_SETTINGS
    given = serve_fields(["--host", "0.0.0.0", "--token-file", "token.txt", "--fsync", "--no-resident",
                          "--access-log", "--port", "0", "--workers", "2", "--log-level", "debug"])
    assert ServerOptions(**given["server"]) == ServerOptions(host="0.0.0.0", token_file="token.txt", fsync=True,
                                                             access_log=True, port=0, workers=2, log_level="debug")
    assert Settings(**given["settings"]) == Settings(batch_processes=1, resident=False)
    # every field of both classes that the command line sets has its option, and nothing else is set
    assert set(left_out["server"]) == set(vars(ServerOptions()))
    assert set(left_out["settings"]) < set(vars(SERVE_SETTINGS))


@pytest.mark.parametrize("field, value, owner", [("host", "", "ServerOptions"), ("token_file", "", "ServerOptions"),
                                                 ("fsync", "yes", "ServerOptions"), ("access_log", 1, "ServerOptions"),
                                                 ("resident", None, "create_app")])
def test_the_serve_switches_and_names_are_checked_by_their_class(field, value, owner):
    with pytest.raises(ConfigError) as caught:
        (Settings if owner == "create_app" else ServerOptions)(**{field: value})
    assert (caught.value.owner, caught.value.parameter, caught.value.value) == (owner, field, value)

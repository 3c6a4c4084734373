import pytest

from veracity.config import load_config
from veracity.errors import ConfigError


def test_defaults_need_no_file_and_no_key():
    cfg = load_config(env={})
    assert cfg.model == "embedded"
    assert cfg.qacheck.qa == "auto" and cfg.qacheck.max_iterations == 5
    assert cfg.api_key is None


def test_file_then_environment_then_flags(tmp_path):
    f = tmp_path / "v.toml"
    f.write_text('model = "gguf:/m.gguf"\nmax_claim_chars = 100\n[qacheck]\nqa = "closed-book"\nmax_iterations = 3\n')
    cfg = load_config(f, env={"VERACITY_MAX_CLAIM_CHARS": "50", "OPENAI_API_KEY": "sk-x"})
    assert (cfg.model, cfg.max_claim_chars, cfg.qacheck.qa, cfg.qacheck.max_iterations) == (
        "gguf:/m.gguf",
        50,
        "closed-book",
        3,
    )
    assert cfg.api_key == "sk-x"
    cfg = load_config(f, {"max_claim_chars": 10, "qacheck.qa": "retriever-reader", "model": None}, env={})
    assert (cfg.model, cfg.max_claim_chars, cfg.qacheck.qa) == ("gguf:/m.gguf", 10, "retriever-reader")
    assert "sk-x" not in repr(cfg)


@pytest.mark.parametrize(
    "toml,message",
    [
        ('modle = "x"', "unknown configuration key 'modle'"),
        ('max_claim_chars = "many"', "max_claim_chars must be int"),
        ('[qacheck]\nqa = "oracle"', "qacheck.qa must be one of"),
        ("[qacheck]\nmax_iterations = 0", "between 1 and 20"),
        ("model = ", "not valid TOML"),
    ],
)
def test_invalid_configuration_is_named(tmp_path, toml, message):
    f = tmp_path / "bad.toml"
    f.write_text(toml)
    with pytest.raises(ConfigError, match=message):
        load_config(f, env={})


def test_bad_environment_value_is_named():
    with pytest.raises(ConfigError, match="VERACITY_N_THREADS: n_threads must be int"):
        load_config(env={"VERACITY_N_THREADS": "lots"})


def test_missing_config_file():
    with pytest.raises(ConfigError, match="not found"):
        load_config("/nonexistent/veracity.toml", env={})

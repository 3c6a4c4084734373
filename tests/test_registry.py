"""The registry: each pipeline declares what it needs and accepts; front ends ask it instead of building pipelines."""

import pytest

from veracity.config import load_config
from veracity.pipeline import REGISTRY, Pipeline, register
from veracity.registry import available_pipelines, get_pipeline, pipeline_specs


def test_every_pipeline_declares_what_it_needs_and_what_it_builds():
    specs = pipeline_specs()
    assert set(specs) == set(available_pipelines())
    plain, rr = load_config(env={}), load_config(overrides={"qacheck.qa": "retriever-reader"}, env={})
    local = load_config(overrides={"defame.search": "local", "index": "/nowhere"}, env={})
    expect = {  # name: (qa, needs an index by default, with qa=retriever-reader, with local search, input, images)
        "qacheck": ("choice", False, True, False, "claim", False),
        "qacheck-retriever-reader": ("retriever-reader", True, True, True, "claim", False),
        "qacheck-closed-book": ("closed-book", False, False, False, "claim", False),
        "direct": (None, False, False, False, "claim", False),
        "defame": (None, False, False, True, "claim", True),
        "answer:fc-rag": (None, True, True, True, "multiple_choice", False),
    }
    for name, (qa, default, with_rr, with_local, kind, images) in expect.items():
        s = specs[name]
        assert (
            s.qa,
            s.needs_index(plain),
            s.needs_index(rr),
            s.needs_index(local),
            s.input_kind,
            s.accepts_images,
        ) == (qa, default, with_rr, with_local, kind, images), name
    for name, s in specs.items():  # the declaration agrees with the pipeline that is built
        for cfg in (plain, rr):
            pipe = get_pipeline(name, cfg)
            assert isinstance(pipe, s.kind) and pipe.name == name
            assert pipe.needs_retriever(cfg) == s.needs_index(cfg), (name, cfg.qacheck.qa)
            assert pipe.input_kind == s.input_kind and pipe.accepts_images == s.accepts_images
            assert getattr(pipe, "qa_name", None) == s.qa_module(cfg)


def test_the_server_catalog_builds_no_pipeline(tmp_path):
    from conftest import write_rules

    from veracity.server.catalog import Catalog

    class Broken(Pipeline):
        accepts_images = True

        def check(self, claim, ctx):
            raise AssertionError("never run")

    def factory(config):
        raise AssertionError("the catalog built a pipeline to probe it")

    register("test-never-built", "declared only", kind=Broken, index="always")(factory)
    try:
        cat = Catalog(load_config(overrides={"model": write_rules(tmp_path / "r.json"), "kb": False}, env={}))
        info = cat.pipelines["test-never-built"]
        assert info.accepts_images and info.needs_index and not info.available
        assert "needs an index" in info.unavailable_reason
    finally:
        REGISTRY.pop("test-never-built")


def test_a_bad_index_rule_is_refused_at_registration():
    with pytest.raises(ValueError, match="index must be one of"):
        register("x", "y", kind=Pipeline, index="sometimes")

"""What every stage of a DEFAME round does alike: add its step to the record (and the trace), and show the model the
fact-check's images."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..pipeline import Context
    from ..tools.base import ImageStore
    from .record import Record


def add_step(record: Record, ctx: Context, step) -> None:
    """A step of the record: added to it, and emitted (the same object) to the trace."""
    record.add(step)
    ctx.tracer.emit(step)


def images_for_model(store: ImageStore, ctx: Context) -> tuple[str, ...]:
    """The fact-check's images as the model is given them (none for a text-only model)."""
    if not ctx.model.accepts_images:
        return ()
    return tuple(img.data_url() for img in (store.get(r) for r in store.refs()) if img is not None)

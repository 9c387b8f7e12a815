"""Work made one step ahead: CPU work for the next item (drawing a pass's or a block's weights)
on a background thread while the caller's device works on the current one."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Made = TypeVar("Made")


def ahead(items: Iterable[Item], make: Callable[[Item], Made], enabled: bool
          ) -> Iterator[tuple[Item, Made]]:
    """(item, make(item)) for each item, in order. `enabled`: make(next item) runs on a
    background thread while the caller works on the current one (a queue of one), so at most
    two items' results are alive; else each is made when it is asked for. make must not depend
    on what the caller does with earlier results (each seed's generator is its own stream, so a
    pass's weights are the same numbers whenever they are drawn)."""
    items = iter(items)
    if not enabled:
        for item in items:
            yield item, make(item)
        return
    end = object()
    with ThreadPoolExecutor(1) as pool:
        current = next(items, end)
        pending = None if current is end else pool.submit(make, current)
        while pending is not None:
            made = pending.result()
            following = next(items, end)
            pending = None if following is end else pool.submit(make, following)
            yield current, made
            current = following

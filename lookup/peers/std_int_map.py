"""The iteration order of libstdc++'s ``std::unordered_map<int, V>``, reproduced in Python.

Two peers break ties by whichever key their C++ hash map yields first: llama.cpp's n-gram cache
(``common_ngram_cache_part``: the first of equally frequent tokens wins) and SGLang's draft tree
(``fillResult`` lays nodes out in the map's order). That order is not random: it follows from
the keys, the insertion history and the rehash policy. :class:`StdIntMap` mirrors libstdc++
(GCC's ``bits/hashtable.h`` and ``src/c++11/hashtable_c++0x.cc``, unchanged from GCC 5 to 14)
node for node, so that a port gives the original's output exactly on Linux builds. (libc++,
used on macOS, orders differently: the peers' own output differs between platforms there.)

What is mirrored: ``std::hash<int>`` is the identity, the bucket is ``key mod bucket_count``;
nodes form one singly linked list in which each bucket's nodes are contiguous; a new key goes to
the front of its bucket's run, or to the front of the whole list when its bucket is empty; a
rehash (prime policy, max load factor 1) relinks the list in a fixed way; a copy keeps the list
and the bucket count. Erasing is not needed by the peers and is not provided.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Iterator

#: libstdc++'s ``__prime_list`` from 17 up (``_M_next_bkt`` searches from its 7th entry), as
#: returned by ``_Prime_rehash_policy::_M_next_bkt`` (read out of libstdc++ 12 on this machine).
_PRIMES = (
    17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 103, 109, 113, 127, 137,
    139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257, 277, 293, 313, 337, 359, 383, 409, 439, 467, 503,
    541, 577, 619, 661, 709, 761, 823, 887, 953, 1031, 1109, 1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029,
    2179, 2357, 2549, 2753, 2971, 3209, 3469, 3739, 4027, 4349, 4703, 5087, 5503, 5953, 6427, 6949, 7517,
    8123, 8783, 9497, 10273, 11113, 12011, 12983, 14033, 15173, 16411, 17749, 19183, 20753, 22447, 24281,
    26267, 28411, 30727, 33223, 35933, 38873, 42043, 45481, 49201, 53201, 57557, 62233, 67307, 72817, 78779,
    85229, 92203, 99733, 107897, 116731, 126271, 136607, 147793, 159871, 172933, 187091, 202409, 218971,
    236897, 256279, 277261, 299951, 324503, 351061, 379787, 410857, 444487, 480881, 520241, 562841, 608903,
    658753, 712697, 771049, 834181, 902483, 976369, 1056323, 1142821, 1236397, 1337629, 1447153, 1565659,
    1693859, 1832561, 1982627, 2144977, 2320627, 2510653, 2716249, 2938679, 3179303,
)
_FAST = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)  # _M_next_bkt's table for n < 14
_HEAD = object()  # libstdc++'s _M_before_begin: the node before the first node
_SIZE_T = 1 << 64


class StdIntMap:
    """An int -> int map that iterates in the order libstdc++'s ``unordered_map<int, int>`` would.

    ``add(key, n)`` is ``map[key] += n`` (inserting ``key`` with ``n`` when absent, as
    ``emplace`` then ``++`` do in the peers); ``items()`` walks the map in libstdc++'s order.
    """

    __slots__ = ("_next", "_buckets", "_values", "_next_resize")

    def __init__(self) -> None:
        self._next: dict = {_HEAD: None}  # node -> following node (None: end of the list)
        self._buckets: list = [None]  # bucket -> the node *before* its first node (None: empty)
        self._values: dict[int, int] = {}
        self._next_resize = 0  # the rehash policy's _M_next_resize

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: int) -> bool:
        return key in self._values

    def __getitem__(self, key: int) -> int:
        return self._values[key]

    def get(self, key: int, default: int | None = None) -> int | None:
        return self._values.get(key, default)

    def keys(self) -> Iterator[int]:
        """Keys in libstdc++'s iteration order."""
        node = self._next[_HEAD]
        while node is not None:
            yield node
            node = self._next[node]

    def items(self) -> Iterator[tuple[int, int]]:
        """``(key, value)`` pairs in libstdc++'s iteration order."""
        values = self._values
        for key in self.keys():
            yield key, values[key]

    def add(self, key: int, n: int) -> None:
        """``map[key] += n``; a new key is inserted the way ``emplace`` inserts it."""
        values = self._values
        if key in values:
            values[key] += n
            return
        if len(values) + 1 > self._next_resize:  # _M_need_rehash's first test, inline: the hot path skips it
            rehash_to = self._need_rehash(len(self._buckets), len(values), 1)
            if rehash_to:
                self._rehash(rehash_to)
        # _M_insert_bucket_begin, inline
        nxt, buckets = self._next, self._buckets
        count = len(buckets)
        bkt = (key % _SIZE_T) % count
        before = buckets[bkt]
        if before is not None:
            nxt[key] = nxt[before]
            nxt[before] = key
        else:
            head = nxt[_HEAD]
            nxt[key] = head
            nxt[_HEAD] = key
            if head is not None:
                buckets[(head % _SIZE_T) % count] = key
            buckets[bkt] = _HEAD
        values[key] = n

    @classmethod
    def single(cls, key: int, value: int) -> StdIntMap:
        """``StdIntMap()`` then ``add(key, value)``, quicker: the first insert always makes 13 buckets."""
        out = cls.__new__(cls)
        out._next = {_HEAD: key, key: None}
        out._buckets = [None] * _FAST[12]
        out._buckets[(key % _SIZE_T) % _FAST[12]] = _HEAD
        out._values = {key: value}
        out._next_resize = _FAST[12]
        return out

    def set(self, key: int, value: int) -> None:
        """``map[key] = value`` (``operator[]``: inserts like ``emplace`` when absent)."""
        if key in self._values:
            self._values[key] = value
        else:
            self.add(key, value)

    def copy(self) -> StdIntMap:
        """The copy constructor: same bucket count, same list order."""
        out = StdIntMap.__new__(StdIntMap)
        out._next = dict(self._next)
        out._buckets = list(self._buckets)
        out._values = dict(self._values)
        out._next_resize = self._next_resize
        return out

    @classmethod
    def from_items(cls, items) -> StdIntMap:
        """A new map filled by ``emplace`` in the order given (what reading a saved map back does)."""
        out = cls()
        for key, value in items:
            out.add(key, value)
        return out

    # ------------------------------------------------------------------ libstdc++, transcribed
    @staticmethod
    def _bucket(key: int, count: int) -> int:
        return (key % _SIZE_T) % count  # std::hash<int> is the identity, cast to size_t

    def _next_bkt(self, n: int) -> int:
        """_Prime_rehash_policy::_M_next_bkt: the bucket count for at least ``n`` buckets."""
        if n < len(_FAST):
            if n == 0:
                return 1
            self._next_resize = _FAST[n]  # floor(buckets * max_load_factor 1.0)
            return _FAST[n]
        i = bisect_left(_PRIMES, n)
        if i >= len(_PRIMES) - 1:
            raise OverflowError("StdIntMap: more keys than this transcription of libstdc++ covers")
        self._next_resize = _PRIMES[i]
        return _PRIMES[i]

    def _need_rehash(self, n_bkt: int, n_elt: int, n_ins: int) -> int:
        """_Prime_rehash_policy::_M_need_rehash: the new bucket count, or 0 for no rehash."""
        if n_elt + n_ins <= self._next_resize:
            return 0
        min_bkts = max(n_elt + n_ins, 0 if self._next_resize else 11)  # / max_load_factor 1.0
        if min_bkts >= n_bkt:
            return self._next_bkt(max(min_bkts + 1, n_bkt * 2))
        self._next_resize = n_bkt
        return 0

    def _rehash(self, count: int) -> None:
        """_Hashtable::_M_rehash_aux for unique keys: relink every node into ``count`` buckets."""
        nxt = self._next
        buckets: list = [None] * count
        node = nxt[_HEAD]
        nxt[_HEAD] = None
        bbegin_bkt = 0
        while node is not None:
            following = nxt[node]
            bkt = self._bucket(node, count)
            if buckets[bkt] is None:
                nxt[node] = nxt[_HEAD]
                nxt[_HEAD] = node
                buckets[bkt] = _HEAD
                if nxt[node] is not None:
                    buckets[bbegin_bkt] = node
                bbegin_bkt = bkt
            else:
                nxt[node] = nxt[buckets[bkt]]
                nxt[buckets[bkt]] = node
            node = following
        self._buckets = buckets

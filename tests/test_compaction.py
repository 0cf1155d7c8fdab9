"""Row compaction: the bucket ladders, the partition, gather and scatter."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vcrnn_jax import compaction


@pytest.mark.parametrize('batch,rows,want', [
    (10, None, (10,)), (10, 10, (10,)), (10, 64, (10,)), (10, 4, (4, 8, 10)),
    (8, 2, (2, 4, 6, 8)), (5, 1, (1, 2, 3, 4, 5)), (1, 1, (1,))])
def test_bucket_sizes_are_the_multiples_up_to_the_batch(batch, rows, want):
  assert compaction.bucket_sizes(batch, rows) == want


@pytest.mark.parametrize('batch,rows,want', [
    (24, 2, (24, 12, 6, 3, 2)), (128, 8, (128, 64, 32, 16, 8)),
    (16, 8, (16, 8)), (5, 1, (5, 3, 2, 1)), (4, 8, (4,)), (7, None, (7,))])
def test_halving_sizes_halve_down_to_compact_rows(batch, rows, want):
  assert compaction.halving_sizes(batch, rows) == want


def test_bucket_index_picks_the_smallest_bucket_that_holds_the_rows():
  sizes = (3, 6, 7)
  counts = jnp.arange(8, dtype=jnp.int32)
  got = np.asarray(compaction.bucket_index(counts, sizes))
  want = [0] + [1 + min(i for i, s in enumerate(sizes) if s >= c)
                for c in range(1, 8)]
  np.testing.assert_array_equal(got, want)
  assert int(compaction.bucket_index(jnp.int32(4), sizes)) == 2


@pytest.mark.parametrize('levels', [2, 3, 5])
def test_order_rows_is_a_stable_descending_sort(levels):
  rank = jax.random.randint(jax.random.key(levels), (37,), 0, levels)
  if levels == 2:
    rank = rank > 0
  got = compaction.order_rows(rank, levels)
  want = np.argsort(-np.asarray(rank, np.int32), kind='stable')
  np.testing.assert_array_equal(got, want)


def test_take_and_put_move_rows_out_and_back():
  tree = {'a': jnp.arange(12.0).reshape(6, 2), 'b': jnp.arange(6)}
  rows = jnp.array([4, 1, 5])
  sub = compaction.take(tree, rows)
  np.testing.assert_array_equal(sub['b'], [4, 1, 5])
  back = compaction.put(jax.tree_util.tree_map(jnp.zeros_like, tree), rows,
                        jax.tree_util.tree_map(lambda x: x + 100, sub))
  np.testing.assert_array_equal(back['b'], [0, 101, 0, 0, 104, 105])
  np.testing.assert_array_equal(back['a'][1], [102.0, 103.0])


@pytest.mark.parametrize('compact_rows', [None, 1, 2, 4])
def test_switch_rows_computes_the_rows_of_a_bucket_only(compact_rows):
  batch = 6
  seen = []

  def fun(operands):
    x, compute = operands
    jax.debug.callback(lambda n=x.shape[0]: seen.append(n))
    # Rows that ride along unmasked come out as idle gives them.
    return jnp.where(compute[:, None], 2.0 * x + 1.0, x)

  idle = lambda operands: operands[0]
  x = jnp.arange(12.0).reshape(batch, 2)
  run = jax.jit(lambda x, c: compaction.switch_rows(fun, idle, (x, c), c,
                                                    compact_rows))
  sizes = compaction.bucket_sizes(batch, compact_rows)
  for k in range(batch + 1):
    compute = jnp.asarray(np.random.default_rng(k).permutation(batch) < k)
    seen.clear()
    got = run(x, compute)
    jax.effects_barrier()
    np.testing.assert_array_equal(
        got, jnp.where(compute[:, None], 2.0 * x + 1.0, x))
    assert seen == ([min(s for s in sizes if s >= k)] if k else [])


def test_compact_rows_must_be_none_or_a_positive_int():
  assert compaction.check_compact_rows(None) is None
  assert compaction.check_compact_rows(np.int64(3)) == 3
  for bad in (0, -1, 1.5, True, '2'):
    with pytest.raises(ValueError, match='compact_rows must be a positive'):
      compaction.check_compact_rows(bad)
    with pytest.raises(ValueError, match='compact_rows must be a positive'):
      compaction.bucket_sizes(4, bad)

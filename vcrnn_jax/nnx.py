"""Thin ``flax.nnx`` modules around the pure cells.

Each module holds its cell's params as :class:`flax.nnx.Param` leaves and
calls the pure functions; no maths lives here. They subclass
``flax.nnx.RNNCellBase`` (``__call__(carry, inputs) -> (carry, y)``,
``initialize_carry``, ``num_feature_axes``), so they run inside
``flax.nnx.RNN`` unchanged:

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> from vcrnn_jax import nnx as vnnx
>>> cell = vnnx.GRU(8, 32, rngs=nnx.Rngs(0))   # in_features, hidden_features
>>> nnx.RNN(cell)(jnp.ones((4, 10, 8))).shape
(4, 10, 32)

As NNX modules do, they create their params when built, so the input size is
the first constructor argument (``GRU(in_features, hidden_features, *,
rngs)``, as ``flax.nnx.GRUCell``). Every option of the pure factory is a
constructor argument with the factory's default (read from its signature).
:class:`Elman`, :class:`GRU` and :class:`LSTM` take every argument of
``flax.nnx.SimpleCell``, ``GRUCell`` and ``LSTMCell`` with flax's meaning
(``dtype`` the computation dtype, ``gate_fn``, ``activation_fn``,
``recurrent_kernel_init``, ``carry_init``, ``keep_rngs``, ``promote_dtype``,
the params' metadata); :func:`lstm_params_to_flax` and
:func:`elman_params_to_flax` convert the params to flax's cells'.

**Params.** A module's params are laid out exactly as the pure cell's params
tree: every entry is an attribute of the same name (a nested dict, such as
VCRNN's ``scheduler``, is a small container module), and a wrapper holds the
modules it wraps under the pure tree's names (ACT's ``cell``, the stack's
``layer_0``, ``layer_1``, ...). So ``nnx.state(module, nnx.Param)`` has the
pure tree's paths, and :func:`to_params` / :func:`from_params` convert both
ways: a checkpoint of the pure cell (the binaries') loads into a module and
back.

**Extras.** What the pure cell takes in its :class:`vcrnn_jax.core.Context`
comes from the module's state, since ``flax.nnx.RNN`` has no slot for it:

* *Dropout* (RHN family, the stack): a module whose cell draws dropout masks
  forks a ``'dropout'`` stream from its ``rngs`` (``'default'`` when there is
  none, as ``nnx.Dropout``) and draws one key per call, unless its
  ``deterministic`` attribute is True. ``model.eval()`` and ``model.train()``
  (or ``nnx.view(model, deterministic=...)``) switch it. Within one call the
  pure cells fold that key as they always do. :class:`RNN` draws one key per
  sequence, so masks are shared over time (variational dropout, as
  :func:`vcrnn_jax.unroll`); under ``flax.nnx.RNN`` the cell is called once
  per step and draws a new key each time, so masks change from step to step.
* *The training step* (VCRNN's and VCGRU's sharpness schedule): each VC
  module holds a :class:`Step` variable, ``module.step``, an int32 scalar that
  starts at 0 and never advances by itself. Set it to the number of updates
  done so far (what the binaries pass; ``optimizer.step`` of
  ``nnx.Optimizer``) with :func:`set_step` before each training step, inside
  or outside ``nnx.jit``: it is an array, so a new value does not recompile.
  ``model.eval()`` does not touch it: evaluation uses the soft mask at the
  sharpness of the step last set (after training, the final sharpness), as
  the binaries evaluate at the current step. The hard inference path
  (``hard=True``, :func:`vcrnn_jax.vc.vcrnn`) on the same params is
  ``nnx.view(model, hard=True)`` or ``model.set_attributes(hard=True)``.
* *Padding*: ``flax.nnx.RNN`` runs every step of every row and uses
  ``seq_lengths`` only to pick each row's returned carry (the last step's
  for an empty row), so an ACT cell ponders on padding and padded outputs
  are not zero. :class:`RNN` runs these modules with :func:`vcrnn_jax.unroll`,
  which tells the cell which rows are padding (``context.active``: ACT takes
  one step, EI-REHN no micro-layer, VC updates nothing), keeps their state
  and zeroes their outputs, so the carry is the one after each row's last
  real step.

A module's ``__call__`` also takes an optional ``context``; the fields it
sets take precedence over the module's own (``step``, ``key``), and an
``active`` mask marks rows the caller will discard.

**Conventions** as in :mod:`vcrnn_jax.linen`: ``inputs`` may have any leading
batch axes (none included); the LSTM carry is
:class:`vcrnn_jax.cells.LSTMState` ``(c, h)`` (a plain ``(c, h)`` tuple, as
``flax.nnx.LSTMCell`` makes, is accepted).

**Adaptive depth.** Beside the cells, :class:`PerTokenDepth` and
:class:`PerExampleDepth` run :mod:`vcrnn_jax.depth` around any NNX
Transformer block (held as ``block``, the halting unit as ``halting``:
:func:`to_params` gives the pure params tree), and :class:`PerTokenRouting`
:mod:`vcrnn_jax.routing` (the routers as ``router``).

**flax versions.** Written for flax 0.12 and kept working back to 0.10 (the
package's floor): values are read with ``get_value()`` where it exists
(``.value`` is deprecated in 0.12), modules are walked with
``nnx.iter_modules`` or, before 0.12, the method; a module forks its dropout
stream where ``RngStream.fork`` exists (0.11+) and shares the caller's
before; ``set_view`` is the hook of ``nnx.view`` (0.12+) and is harmless
without it. The example below uses ``nnx.Optimizer(..., wrt=)`` and
``update(model, grads)`` (0.11+).

Example, an ACT-LSTM trained on 4-bit parity with ``nnx.Optimizer``
(``tests/test_nnx.py`` runs it)::

  import jax
  import jax.numpy as jnp
  import optax
  from flax import nnx
  import vcrnn_jax
  from vcrnn_jax.tasks import parity


  class ParityModel(nnx.Module):

    def __init__(self, bits, hidden, *, rngs):
      # ACT feeds its cell the input plus the first-step flag (Eq. 3).
      lstm = vcrnn_jax.nnx.LSTM(bits + 1, hidden, rngs=rngs)
      act = vcrnn_jax.nnx.ACT(lstm, output_size=1, max_steps=8, rngs=rngs)
      self.rnn = vcrnn_jax.nnx.RNN(act)

    def __call__(self, inputs, seq_lengths=None):
      return self.rnn(inputs, seq_lengths=seq_lengths)   # ACTOutput [B, T]


  def train_parity(steps=200, bits=4, hidden=16, batch_size=32, tau=1e-3,
                   seed=0):
    task = parity.task(bits=bits)
    model = ParityModel(bits, hidden, rngs=nnx.Rngs(seed))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, batch):
      def loss_fn(model):
        out = model(batch.inputs)
        ponder = vcrnn_jax.act.ponder_cost(out, batch.mask)     # Eq. 11
        return jnp.mean(task.loss(out.output, batch) + tau * ponder)
      loss, grads = nnx.value_and_grad(loss_fn)(model)
      optimizer.update(model, grads)
      return loss

    losses = []
    for step in range(steps):
      batch = task.sample(jax.random.key(step), batch_size)
      losses.append(float(train_step(model, optimizer, batch)))
    return model, losses
"""

from collections.abc import Callable, Mapping, Sequence
import functools
import inspect
import math
import types
from types import MappingProxyType
from typing import Any

from flax import nnx
import jax
import jax.numpy as jnp

from vcrnn_jax import (
  act,
  cells,
  depth,
  linen,
  loops,
  ponder,
  registry,
  rehn,
  repeat,
  routing,
  skip,
  utils,
  vc,
)
from vcrnn_jax.core import (
  Cell,
  Context,
  InputSizeError,
  as_context,
  check_positive_int,
)
from vcrnn_jax.linen import (
  factory_options,
  flatten_batch,
  restore_batch,
  simple_cell,
)
from vcrnn_jax.unroll import unroll

Initializer = utils.Initializer
_NO_METADATA = MappingProxyType({})
# The factories' defaults, read from their signatures (declared once).
_ELMAN = utils.defaults(cells.elman)
_GRU = utils.defaults(cells.gru)
_LSTM = utils.defaults(cells.lstm)
_RHN = utils.defaults(rehn.rhn)
_SRHN = utils.defaults(rehn.srhn)
_SREHN = utils.defaults(rehn.srehn)
_EIREHN = utils.defaults(rehn.ei_rehn)
_VCRNN = utils.defaults(vc.vcrnn)
_VCGRU = utils.defaults(vc.vcgru)
_STACK = utils.defaults(cells.stack)
_ACT = utils.defaults(act.adaptive)
_PONDERNET = utils.defaults(ponder.pondernet)
_SKIP = utils.defaults(skip.skip)
_PER_TOKEN = utils.defaults(depth.per_token)
_PER_EXAMPLE = utils.defaults(depth.per_example)
_ROUTING = utils.defaults(routing.per_token)

__all__ = ['ACT', 'CellModule', 'EIREHN', 'Elman', 'GRU', 'LSTM',
           'PerExampleDepth', 'PerTokenDepth', 'PerTokenRouting',
           'PonderNet', 'RHN', 'RNN', 'Repeat', 'SREHN', 'SRHN', 'Skip',
           'Stack', 'Step', 'VCGRU',
           'VCRNN', 'elman_params_from_flax', 'elman_params_to_flax',
           'from_params', 'lstm_params_from_flax', 'lstm_params_to_flax',
           'module_for', 'set_step', 'to_params']


class Step(nnx.Variable):
  """The training step a VC module's sharpness schedule reads (int32 scalar).

  Not a :class:`flax.nnx.Param`: ``nnx.grad`` and ``nnx.Optimizer`` leave it
  alone; ``nnx.state(model)`` (and so a checkpoint) includes it. Set it with
  :func:`set_step`.
  """


# ----------------------------------------------------------------------------
# flax-version guards and the params layout.


def _value(variable: nnx.Variable) -> Any:
  # flax 0.12 deprecates ``.value`` in favour of ``get_value()``, which
  # older versions lack.
  get = getattr(variable, 'get_value', None)
  return get() if get is not None else variable.value


def _assign(variable: nnx.Variable, value: Any) -> None:
  set_value = getattr(variable, 'set_value', None)
  if set_value is not None:
    set_value(value)
  else:
    variable.value = value


def _iter_modules(module: nnx.Module):
  # flax 0.12 moves ``Module.iter_modules`` to a function and deprecates the
  # method, the only one older versions have.
  if hasattr(nnx, 'iter_modules'):
    return nnx.iter_modules(module)
  return module.iter_modules()


def _pure_dict(state: Any) -> dict:
  # flax 0.12 deprecates the ``State`` methods for functions of the same name.
  if hasattr(nnx, 'to_pure_dict'):
    return nnx.to_pure_dict(state)
  return state.to_pure_dict()


def _stream(rngs: nnx.Rngs, name: str, owner: str) -> Any:
  """``rngs``'s stream ``name`` (nnx falls back to ``'default'``)."""
  if not isinstance(rngs, nnx.Rngs):
    raise ValueError(f'{owner}: rngs must be an nnx.Rngs, got '
                     f'{type(rngs).__name__}.')
  try:
    return rngs[name]
  except (KeyError, AttributeError):
    raise ValueError(
        f'{owner}: rngs has neither a {name!r} nor a \'default\' stream; '
        f'pass e.g. nnx.Rngs(0) or nnx.Rngs(params=0, dropout=1).') from None


def _fork(stream: Any) -> Any:
  # flax >= 0.11 forks a stream for the module to own, as nnx.Dropout does;
  # flax 0.10 has no fork, and the module shares the caller's stream.
  fork = getattr(stream, 'fork', None)
  return fork() if fork is not None else stream


def _own_stream(rngs: nnx.Rngs | None, owner: str) -> Any:
  if rngs is None:
    raise ValueError(f'{owner} draws dropout keys: pass rngs, e.g. '
                     'rngs=nnx.Rngs(0).')
  return _fork(_stream(rngs, 'dropout', owner))


def _carry_stream(rngs: Any, owner: str) -> Any:
  """The stream a carry is drawn from, as flax's cells take it."""
  if isinstance(rngs, nnx.Rngs):
    return _stream(rngs, 'carry', f'{owner}.initialize_carry')
  if isinstance(rngs, nnx.RngStream):
    return rngs
  if rngs is None:
    raise ValueError(
        f'{owner}.initialize_carry: carry_init draws from a key: pass rngs '
        '(e.g. nnx.Rngs(0)), or build the module with keep_rngs=True.')
  raise ValueError(f'{owner}.initialize_carry: rngs must be an nnx.Rngs or '
                   f'nnx.RngStream, got {type(rngs).__name__}.')


class _ParamDict(nnx.Module):
  """A nested dict of the pure params tree, one attribute per entry."""

  def __init__(self, tree: Mapping[str, Any]):
    _set_params(self, tree)


def _set_params(node: nnx.Module, tree: Mapping[str, Any],
                metadata: Mapping[str, Mapping[str, Any]] = _NO_METADATA
                ) -> None:
  """Sets ``tree``'s entries as attributes; ``metadata[name]`` goes to the
  ``nnx.Param`` of the top-level entry ``name`` (sharding names, ...)."""
  for name, value in tree.items():
    if hasattr(node, name):
      raise ValueError(
          f'{type(node).__name__}: the param {name!r} would shadow an '
          'attribute of the module.')
    setattr(node, name, _ParamDict(value) if isinstance(value, Mapping)
            else nnx.Param(value, **metadata.get(name, {})))


def to_params(module: Any) -> dict:
  """The pure cell's params tree of ``module`` (arrays, not Variables).

  ``module.make_cell().apply(to_params(module), ...)`` is the module's own
  computation. Also takes an ``nnx.State`` of a module's params, such as the
  gradients ``nnx.grad`` returns.

  Example:

    >>> from flax import nnx
    >>> from vcrnn_jax import nnx as vnnx
    >>> module = vnnx.GRU(4, 8, rngs=nnx.Rngs(0))
    >>> params = vnnx.to_params(module)
    >>> params['input_kernel'].shape
    (4, 24)
  """
  if isinstance(module, nnx.Module):
    module = nnx.state(module, nnx.Param)
  return _pure_dict(module)


def from_params(module: 'CellModule', params: Mapping[str, Any]) -> None:
  """Sets ``module``'s params, in place, from the pure cell's params tree.

  ``params`` must have the tree's names and shapes (as ``to_params(module)``
  has); each array is cast to the dtype of the param it replaces, as Orbax
  restores into a target.

  Raises:
    ValueError: a name is missing or extra, or a shape differs.

  Example::

    params = vcrnn_jax.cells.gru(8).init(jax.random.key(0), input_size=4)
    module = vnnx.GRU(4, 8, rngs=nnx.Rngs(0))
    vnnx.from_params(module, params)  # vnnx.to_params(module) is params
  """
  _check_tree(type(module).__name__, to_params(module), params, 'module has')
  _assign_tree(module, params)


def _assign_tree(node: nnx.Module, params: Mapping[str, Any]) -> None:
  for name, value in params.items():
    target = getattr(node, name)
    if isinstance(value, Mapping):
      _assign_tree(target, value)
    else:
      _assign(target, jnp.asarray(value, _value(target).dtype))


def _check_tree(owner: str, have: Any, want: Any, what: str) -> None:
  """A one-line error where ``want``'s names or shapes differ from ``have``'s.

  ``what`` says whose ``have`` is, as the message's subject.
  """
  have_flat = {jax.tree_util.keystr(k): v.shape for k, v in
               jax.tree_util.tree_leaves_with_path(have)}
  want_flat = {jax.tree_util.keystr(k): jnp.shape(v) for k, v in
               jax.tree_util.tree_leaves_with_path(want)}
  if have_flat.keys() != want_flat.keys():
    raise ValueError(
        f'{owner}: the params tree is not the one the {what}: missing '
        f'{sorted(have_flat.keys() - want_flat.keys())}, extra '
        f'{sorted(want_flat.keys() - have_flat.keys())}.')
  for path, shape in have_flat.items():
    if tuple(shape) != tuple(want_flat[path]):
      raise ValueError(
          f'{owner}: the params at {path} have shape {tuple(want_flat[path])} '
          f'but the {what} {tuple(shape)}.')


def set_step(module: nnx.Module, step: Any) -> None:
  """Sets the :class:`Step` of every VC module inside ``module`` to ``step``.

  Works inside ``nnx.jit`` with a traced step. Modules without a step (no VC
  cell inside) are left alone.

  Example::

    cell = vnnx.VCRNN(4, 8, sharpness=vc.paper_sharpness(100),
                      rngs=nnx.Rngs(0))
    vnnx.set_step(cell, 250)          # cell.step[...] == 250
    # In a train step: vnnx.set_step(model, optimizer.step[...])
  """
  step = jnp.asarray(step, jnp.int32)
  for _, node in _iter_modules(module):
    variable = getattr(node, 'step', None)
    if isinstance(variable, Step):
      _assign(variable, step)


# ----------------------------------------------------------------------------
# The base module.


def _as_state(owner: str, cell: Cell, carry: Any, batch_shape: tuple,
              size: int) -> Any:
  """``carry`` with its batch axes flattened, as the cell's state type.

  A carry with the state's leaves in another container (flax's plain
  ``(c, h)`` tuple for an LSTM) is rebuilt as the state.

  Raises:
    ValueError: (one line) the carry does not fit the cell and the batch.
  """
  want = jax.eval_shape(lambda: cell.initial_state(size))
  leaves, treedef = jax.tree_util.tree_flatten(want)
  got = jax.tree_util.tree_leaves(carry)
  batch = len(batch_shape)
  got_shapes = tuple(tuple(a.shape) for a in got)
  want_shapes = tuple(batch_shape + tuple(a.shape[1:]) for a in leaves)
  if got_shapes != want_shapes:
    raise ValueError(
        f'{owner}: the carry has shapes {got_shapes} but the cell and the '
        f'batch {batch_shape} need {want_shapes}; build it with '
        'initialize_carry.')
  return jax.tree_util.tree_unflatten(
      treedef, flatten_batch(got, batch, size))


class CellModule(nnx.RNNCellBase):
  """Wraps any :class:`vcrnn_jax.Cell`; subclasses set options, build the cell.

  A subclass's constructor stores its options as attributes of the same
  names and calls :meth:`_setup`; :meth:`make_cell` builds the pure cell
  from them, at every call, so an option set later (``hard`` by
  ``set_attributes``) takes effect.

  Attributes:
    in_features: the input width.
    deterministic: when True the module draws no dropout key.
      ``model.eval()`` sets it on every module; where modules wrap others,
      the flag of the module called (the outermost) decides.
    rngs: only where the cell draws dropout masks: the ``'dropout'``
      stream the module forked from its constructor's ``rngs``.
    carry_rngs: only where built with ``keep_rngs=True`` (Flax's cells):
      the ``'carry'`` stream :meth:`initialize_carry` draws from when it is
      given no ``rngs``.
  """

  in_features: int
  deterministic: bool

  def make_cell(self) -> Cell:
    """The pure :class:`vcrnn_jax.Cell` this module computes."""
    raise NotImplementedError(
        f'{type(self).__name__} must override make_cell() to return the '
        'vcrnn_jax.Cell it wraps.')

  def _uses_key(self) -> bool:
    """Whether the cell draws dropout masks from ``context.key``."""
    return False

  def _step_variable(self) -> Step | None:
    """The :class:`Step` the cell's context reads (None: it needs none)."""
    return None

  def _setup(self, in_features: int, rngs: nnx.Rngs | None,
             deterministic: bool, wrapped: Sequence[str] = (),
             metadata: Mapping[str, Mapping[str, Any]] = _NO_METADATA
             ) -> None:
    """Initialises the params; ``wrapped`` names entries that submodules hold.

    The pure ``init`` draws every param, so the module starts as the pure
    cell with the same key would; a wrapper keeps its submodules' params and
    only checks that they fit. Without ``rngs`` nothing is drawn, which
    only a module with no params of its own and no dropout allows.
    ``metadata`` maps a param's name to its ``nnx.Param`` metadata.
    """
    owner = type(self).__name__
    self.in_features = check_positive_int('in_features', in_features)
    self.deterministic = bool(deterministic)
    if self._uses_key():
      self.rngs = _own_stream(rngs, owner)
    cell = self.make_cell()
    if rngs is None:
      params = jax.eval_shape(
          lambda key: cell.init(key, self.in_features), jax.random.key(0))
      own = sorted(k for k in params if k not in wrapped)
      if own:
        raise ValueError(f'{owner} draws its params {own}: pass rngs, e.g. '
                         'rngs=nnx.Rngs(0).')
    else:
      params = cell.init(_stream(rngs, 'params', owner)(), self.in_features)
    _set_params(self, {k: v for k, v in params.items() if k not in wrapped},
                metadata)
    _check_tree(owner, params, to_params(self),
                f'cell (in_features={self.in_features}) needs')

  def _context(self, context: Context | None, batch_shape: tuple,
               size: int) -> Context:
    """``context``'s fields, the rest from the module's state."""
    context = as_context(context)
    if context.key is None and self._uses_key() and not self.deterministic:
      context = context._replace(key=self.rngs())
    step = self._step_variable()
    if context.step is None and step is not None:
      context = context._replace(step=_value(step))
    if context.active is not None:
      context = context._replace(active=jnp.broadcast_to(
          context.active, batch_shape).reshape(size))
    return context

  def __call__(self, carry: Any, inputs: jax.Array,
               context: Context | None = None) -> tuple[Any, Any]:
    """Applies the cell to one time step.

    Args:
      carry: leaves ``[*batch, ...]`` (from :meth:`initialize_carry`).
      inputs: ``[*batch, in_features]``, any number of batch axes.
      context: optional :class:`vcrnn_jax.core.Context`; the fields it sets
        replace the module's own, ``active`` marks discarded rows.

    Returns:
      ``(carry, y)``, ``y`` the pure cell's per-step output (an array or a
      structured output such as :class:`vcrnn_jax.act.ACTOutput`).
    """
    self._check_inputs(inputs.shape, type(self).__name__, '[*batch, {}]')
    batch_shape = inputs.shape[:-1]
    size = math.prod(batch_shape)
    cell = self.make_cell()
    state = _as_state(type(self).__name__, cell, carry, batch_shape, size)
    state, y = cell.apply(
        to_params(self), state, inputs.reshape((size, inputs.shape[-1])),
        self._context(context, batch_shape, size))
    return restore_batch(state, batch_shape), restore_batch(y, batch_shape)

  def _input_hint(self, got: tuple) -> str:
    """What the input-width error adds for this module (a wrapper's rule)."""
    del got
    return ''

  def _check_inputs(self, shape: tuple, owner: str, layout: str) -> None:
    """A one-line ``InputSizeError`` unless ``shape[-1]`` is ``in_features``.

    ``owner`` is who the message names, ``layout`` (``{}`` for the width)
    the shape it asks for.
    """
    if len(shape) < 1 or shape[-1] != self.in_features:
      raise InputSizeError(
          f'{owner}: inputs must have shape {layout.format(self.in_features)}'
          f', got shape {tuple(shape)}{self._input_hint(tuple(shape[-1:]))}.',
          owner, self.in_features)

  def _batch_shape(self, input_shape: tuple) -> tuple:
    if len(input_shape) < 1:
      raise ValueError(
          f'{type(self).__name__}.initialize_carry: input_shape must be '
          f'(*batch, features), got {tuple(input_shape)}.')
    return tuple(input_shape[:-1])

  def initialize_carry(self, input_shape: tuple,
                       rngs: nnx.Rngs | nnx.RngStream | None = None,
                       carry_init: Initializer | None = None) -> Any:
    """The carry for inputs of shape ``(*batch, in_features)``.

    ``flax.nnx.RNNCellBase``'s signature and meaning: each leaf is drawn
    from ``carry_init(key, shape, dtype)`` (default the ``carry_init`` the
    module was built with, where it takes one), with keys from ``rngs``
    (its ``'carry'`` stream) or, if None, from the stream kept by
    ``keep_rngs=True``. Without any ``carry_init`` the carry is the pure
    cell's initial state, zeros, and needs no key.
    """
    batch_shape = self._batch_shape(input_shape)
    state = restore_batch(
        self.make_cell().initial_state(max(math.prod(batch_shape), 1)),
        batch_shape)
    if carry_init is None:
      carry_init = getattr(self, 'carry_init', None)
    if carry_init is None:
      return state
    owner = type(self).__name__
    stream = _carry_stream(
        rngs if rngs is not None else getattr(self, 'carry_rngs', None),
        owner)
    return jax.tree_util.tree_map(
        lambda a: carry_init(stream(), a.shape, a.dtype), state)

  @property
  def num_feature_axes(self) -> int:
    return 1

  def set_view(self, deterministic: bool | None = None) -> None:
    """What ``nnx.view(model, deterministic=...)`` sets (flax >= 0.12)."""
    if deterministic is not None:
      self.deterministic = deterministic


# ----------------------------------------------------------------------------
# The baseline cells.


class _FlaxCell(CellModule):
  """A module with the constructor of a ``flax.nnx`` cell.

  Beyond the pure factory's options it takes Flax's ``carry_init`` (the
  default of :meth:`initialize_carry`), ``keep_rngs`` (keep a ``'carry'``
  stream for :meth:`initialize_carry`) and the ``*_metadata`` of the params
  (the ``nnx.Param`` metadata of ``input_kernel``, of the recurrent
  kernels, of ``bias``).
  """

  def _flax_setup(self, factory: Callable[..., Cell], hidden_features: int,
                  options: dict, *, in_features: int, carry_init: Any,
                  keep_rngs: bool, rngs: nnx.Rngs, kernel_metadata: Mapping,
                  recurrent_kernel_metadata: Mapping, bias_metadata: Mapping,
                  deterministic: bool) -> None:
    self.hidden_features = hidden_features
    for name in utils.keyword_options(factory):
      setattr(self, name, options[name])
    self.carry_init = carry_init
    if keep_rngs:
      self.carry_rngs = _fork(_carry_stream(rngs, type(self).__name__))
    self._setup(in_features, rngs, deterministic, metadata={
        'input_kernel': kernel_metadata,
        'recurrent_kernel': recurrent_kernel_metadata,
        'recurrent_gates_kernel': recurrent_kernel_metadata,
        'bias': bias_metadata})


class Elman(_FlaxCell):
  """:func:`vcrnn_jax.cells.elman` as an NNX module (VCRNN paper Eq. 3).

  A drop-in for ``flax.nnx.SimpleCell``: its constructor arguments with its
  meaning (see :class:`CellModule` for ``carry_init``, ``keep_rngs`` and
  the metadata; with ``dtype`` the carry and output are in it, as there:
  :func:`vcrnn_jax.linen.simple_cell`), the defaults of
  :func:`~vcrnn_jax.cells.elman`. The params differ in layout;
  :func:`elman_params_to_flax` converts them.

  Example::

    cell = vnnx.Elman(4, 8, rngs=nnx.Rngs(0))
    ys = nnx.RNN(cell)(jnp.ones((2, 5, 4)))         # (2, 5, 8)
  """

  def __init__(
      self, in_features: int, hidden_features: int, *,
      dtype: Any = _ELMAN.dtype,
      param_dtype: Any = _ELMAN.param_dtype,
      carry_init: Initializer | None = None,
      residual: bool = _ELMAN.residual,
      activation_fn: Callable[[jax.Array], jax.Array] = _ELMAN.activation_fn,
      kernel_init: Initializer = _ELMAN.kernel_init,
      recurrent_kernel_init: Initializer = _ELMAN.recurrent_kernel_init,
      bias_init: Initializer = _ELMAN.bias_init,
      promote_dtype: Callable[..., Any] | None = _ELMAN.promote_dtype,
      keep_rngs: bool = False,
      rngs: nnx.Rngs,
      kernel_metadata: Mapping[str, Any] = _NO_METADATA,
      recurrent_kernel_metadata: Mapping[str, Any] = _NO_METADATA,
      bias_metadata: Mapping[str, Any] = _NO_METADATA,
      deterministic: bool = False):
    self._flax_setup(
        cells.elman, hidden_features, locals(), in_features=in_features,
        carry_init=carry_init, keep_rngs=keep_rngs, rngs=rngs,
        kernel_metadata=kernel_metadata,
        recurrent_kernel_metadata=recurrent_kernel_metadata,
        bias_metadata=bias_metadata, deterministic=deterministic)

  def make_cell(self) -> Cell:
    return simple_cell(self.hidden_features,
                       **factory_options(self, cells.elman))


class GRU(_FlaxCell):
  """:func:`vcrnn_jax.cells.gru` as an NNX module (VCRNN paper Eq. 4-6).

  Takes ``flax.nnx.GRUCell``'s constructor arguments with its meaning (see
  :class:`CellModule` for ``carry_init``, ``keep_rngs`` and the metadata),
  the defaults of :func:`~vcrnn_jax.cells.gru`. The maths are the paper's
  GRU: the reset gate multiplies ``h`` before the recurrent matmul and ``z``
  weights the new state, where ``flax.nnx.GRUCell`` applies the reset after
  the matmul and weights the old state with ``z``.

  Example::

    cell = vnnx.GRU(4, 8, rngs=nnx.Rngs(0))
    carry, h = cell(cell.initialize_carry((2, 4)), jnp.ones((2, 4)))
  """

  def __init__(
      self, in_features: int, hidden_features: int, *,
      gate_fn: Callable[[jax.Array], jax.Array] = _GRU.gate_fn,
      activation_fn: Callable[[jax.Array], jax.Array] = _GRU.activation_fn,
      kernel_init: Initializer = _GRU.kernel_init,
      recurrent_kernel_init: Initializer = _GRU.recurrent_kernel_init,
      bias_init: Initializer = _GRU.bias_init,
      dtype: Any = _GRU.dtype,
      param_dtype: Any = _GRU.param_dtype,
      carry_init: Initializer | None = None,
      promote_dtype: Callable[..., Any] | None = _GRU.promote_dtype,
      keep_rngs: bool = False,
      rngs: nnx.Rngs,
      kernel_metadata: Mapping[str, Any] = _NO_METADATA,
      recurrent_kernel_metadata: Mapping[str, Any] = _NO_METADATA,
      bias_metadata: Mapping[str, Any] = _NO_METADATA,
      deterministic: bool = False):
    self._flax_setup(
        cells.gru, hidden_features, locals(), in_features=in_features,
        carry_init=carry_init, keep_rngs=keep_rngs, rngs=rngs,
        kernel_metadata=kernel_metadata,
        recurrent_kernel_metadata=recurrent_kernel_metadata,
        bias_metadata=bias_metadata, deterministic=deterministic)

  def make_cell(self) -> Cell:
    return cells.gru(self.hidden_features, **factory_options(self, cells.gru))


class LSTM(_FlaxCell):
  """:func:`vcrnn_jax.cells.lstm` as an NNX module (EI-REHN paper Eq. 3-5).

  A drop-in for ``flax.nnx.LSTMCell``: its constructor arguments with its
  meaning (see :class:`CellModule` for ``carry_init``, ``keep_rngs`` and
  the metadata), plus ``forget_bias``; the defaults of
  :func:`~vcrnn_jax.cells.lstm`; a ``(c, h)`` carry. The params differ in
  layout; :func:`lstm_params_to_flax` converts them.

  Example::

    cell = vnnx.LSTM(4, 8, forget_bias=1.0, dtype=jnp.bfloat16,
                     rngs=nnx.Rngs(0))           # float32 params
    ys = nnx.RNN(cell)(jnp.ones((2, 5, 4)))         # (2, 5, 8)
  """

  def __init__(
      self, in_features: int, hidden_features: int, *,
      gate_fn: Callable[[jax.Array], jax.Array] = _LSTM.gate_fn,
      activation_fn: Callable[[jax.Array], jax.Array] = _LSTM.activation_fn,
      kernel_init: Initializer = _LSTM.kernel_init,
      recurrent_kernel_init: Initializer = _LSTM.recurrent_kernel_init,
      bias_init: Initializer = _LSTM.bias_init,
      dtype: Any = _LSTM.dtype,
      param_dtype: Any = _LSTM.param_dtype,
      carry_init: Initializer | None = None,
      promote_dtype: Callable[..., Any] | None = _LSTM.promote_dtype,
      keep_rngs: bool = False,
      rngs: nnx.Rngs,
      kernel_metadata: Mapping[str, Any] = _NO_METADATA,
      recurrent_kernel_metadata: Mapping[str, Any] = _NO_METADATA,
      bias_metadata: Mapping[str, Any] = _NO_METADATA,
      forget_bias: float = _LSTM.forget_bias,
      deterministic: bool = False):
    self._flax_setup(
        cells.lstm, hidden_features, locals(), in_features=in_features,
        carry_init=carry_init, keep_rngs=keep_rngs, rngs=rngs,
        kernel_metadata=kernel_metadata,
        recurrent_kernel_metadata=recurrent_kernel_metadata,
        bias_metadata=bias_metadata, deterministic=deterministic)

  def make_cell(self) -> Cell:
    return cells.lstm(self.hidden_features, **factory_options(self, cells.lstm))


# ----------------------------------------------------------------------------
# The highway cells (EI-REHN paper).


def _store(module: CellModule, factory: Callable[..., Cell],
           options: Mapping[str, Any]) -> None:
  """Sets ``factory``'s keyword options from ``options`` (a constructor's
  ``locals()``) as attributes of the same names."""
  for name in utils.keyword_options(factory):
    setattr(module, name, options[name])


class RHN(CellModule):
  """:func:`vcrnn_jax.rehn.rhn` (``shared=True``: :func:`~vcrnn_jax.rehn.srhn`)
  as an NNX module (EI-REHN paper Eq. 6-8).

  With ``input_dropout`` or ``state_dropout`` it draws one dropout key per
  call from ``rngs``'s ``'dropout'`` stream unless ``deterministic``.

  Example::

    cell = vnnx.RHN(4, 8, depth=3, state_dropout=0.25,
                    rngs=nnx.Rngs(params=0, dropout=1))
    ys = vnnx.RNN(cell)(jnp.ones((2, 5, 4)))   # masks shared over time
    cell.eval()                                # no dropout
  """

  def __init__(
      self, in_features: int, hidden_features: int, depth: int, *,
      shared: bool = False,
      coupled: bool = _RHN.coupled,
      transform_bias: float = _RHN.transform_bias,
      input_dropout: float = _RHN.input_dropout,
      state_dropout: float = _RHN.state_dropout,
      kernel_init: Initializer = _RHN.kernel_init,
      recurrent_kernel_init: Initializer = _RHN.recurrent_kernel_init,
      param_dtype: Any = _RHN.param_dtype,
      deterministic: bool = False, rngs: nnx.Rngs):
    self.hidden_features = hidden_features
    self.depth = depth
    self.shared = shared
    _store(self, rehn.rhn, locals())
    self._setup(in_features, rngs, deterministic)

  def _uses_key(self) -> bool:
    return bool(self.input_dropout or self.state_dropout)

  def make_cell(self) -> Cell:
    factory = rehn.srhn if self.shared else rehn.rhn
    return factory(self.hidden_features, self.depth,
                   **factory_options(self, factory))


class SRHN(RHN):
  """:func:`vcrnn_jax.rehn.srhn` as an NNX module: :class:`RHN` with one
  layer's weights shared by every micro-layer (the paper's SRHN)."""

  def __init__(
      self, in_features: int, hidden_features: int, depth: int, *,
      coupled: bool = _SRHN.coupled,
      transform_bias: float = _SRHN.transform_bias,
      input_dropout: float = _SRHN.input_dropout,
      state_dropout: float = _SRHN.state_dropout,
      kernel_init: Initializer = _SRHN.kernel_init,
      recurrent_kernel_init: Initializer = _SRHN.recurrent_kernel_init,
      param_dtype: Any = _SRHN.param_dtype,
      deterministic: bool = False, rngs: nnx.Rngs):
    super().__init__(
        in_features, hidden_features, depth, shared=True, coupled=coupled,
        transform_bias=transform_bias, input_dropout=input_dropout,
        state_dropout=state_dropout, kernel_init=kernel_init,
        recurrent_kernel_init=recurrent_kernel_init, param_dtype=param_dtype,
        deterministic=deterministic, rngs=rngs)


class _Elastic(CellModule):
  """What the elastic-depth modules share: dropout from their options."""

  def _uses_key(self) -> bool:
    return bool(self.input_dropout or self.state_dropout)


class SREHN(_Elastic):
  """:func:`vcrnn_jax.rehn.srehn` as an NNX module (EI-REHN Eq. 9-15).

  The per-step output is a :class:`vcrnn_jax.rehn.REHNOutput` (``output``,
  ``depth``). Dropout as in :class:`RHN`.

  Example::

    cell = vnnx.SREHN(4, 8, max_depth=5, rngs=nnx.Rngs(0))
    out = vnnx.RNN(cell)(jnp.ones((2, 5, 4)))  # out.depth: (2, 5)
  """

  def __init__(
      self, in_features: int, hidden_features: int, max_depth: int, *,
      transform_bias: float = _SREHN.transform_bias,
      alpha_init: float = _SREHN.alpha_init,
      beta_init: float = _SREHN.beta_init,
      rate_bias: float = _SREHN.rate_bias,
      input_dropout: float = _SREHN.input_dropout,
      state_dropout: float = _SREHN.state_dropout,
      loop: loops.LoopConfig | str = _SREHN.loop,
      kernel_init: Initializer = _SREHN.kernel_init,
      recurrent_kernel_init: Initializer = _SREHN.recurrent_kernel_init,
      param_dtype: Any = _SREHN.param_dtype,
      open_gate: bool = _SREHN.open_gate,
      deterministic: bool = False, rngs: nnx.Rngs):
    self.hidden_features = hidden_features
    self.max_depth = max_depth
    _store(self, rehn.srehn, locals())
    self._setup(in_features, rngs, deterministic)

  def make_cell(self) -> Cell:
    return rehn.srehn(self.hidden_features, self.max_depth,
                      **factory_options(self, rehn.srehn))


class EIREHN(_Elastic):
  """:func:`vcrnn_jax.rehn.ei_rehn` as an NNX module (EI-REHN Eq. 9-22).

  Takes :class:`SREHN`'s arguments plus ``hyper_size`` (None: ``ceil(
  hidden_features / 2)``) and ``hyper_init``.

  Example::

    cell = vnnx.EIREHN(4, 8, max_depth=5, hyper_size=3, rngs=nnx.Rngs(0))
    out = vnnx.RNN(cell)(jnp.ones((2, 5, 4)))  # REHNOutput, (2, 5, ...)
  """

  def __init__(
      self, in_features: int, hidden_features: int, max_depth: int, *,
      hyper_size: int | None = None,
      transform_bias: float = _EIREHN.transform_bias,
      alpha_init: float = _EIREHN.alpha_init,
      beta_init: float = _EIREHN.beta_init,
      rate_bias: float = _EIREHN.rate_bias,
      input_dropout: float = _EIREHN.input_dropout,
      state_dropout: float = _EIREHN.state_dropout,
      loop: loops.LoopConfig | str = _EIREHN.loop,
      kernel_init: Initializer = _EIREHN.kernel_init,
      recurrent_kernel_init: Initializer = _EIREHN.recurrent_kernel_init,
      hyper_init: Initializer = _EIREHN.hyper_init,
      param_dtype: Any = _EIREHN.param_dtype,
      open_gate: bool = _EIREHN.open_gate,
      deterministic: bool = False, rngs: nnx.Rngs):
    self.hidden_features = hidden_features
    self.max_depth = max_depth
    self.hyper_size = hyper_size
    _store(self, rehn.ei_rehn, locals())
    self._setup(in_features, rngs, deterministic)

  def make_cell(self) -> Cell:
    hyper = self.hyper_size or -(-self.hidden_features // 2)
    return rehn.ei_rehn(self.hidden_features, hyper, self.max_depth,
                        **factory_options(self, rehn.ei_rehn))


# ----------------------------------------------------------------------------
# The variable computation cells (Jernite et al.).


class _VC(CellModule):
  """What the VC modules share: the training step, the hard view."""

  def _vc_setup(self, factory: Callable[..., Cell], hidden_features: int,
                options: Mapping[str, Any], in_features: int,
                rngs: nnx.Rngs, deterministic: bool) -> None:
    self.hidden_features = hidden_features
    _store(self, factory, options)
    # A static attribute must hash (nnx.jit keys its cache on it).
    if isinstance(self.block_sizes, list):
      self.block_sizes = tuple(self.block_sizes)
    self.step = Step(jnp.zeros((), jnp.int32))
    self._setup(in_features, rngs, deterministic)

  def _step_variable(self) -> Step | None:
    return self.step

  def set_view(self, deterministic: bool | None = None,
               hard: bool | None = None) -> None:
    """What ``nnx.view(model, deterministic=..., hard=...)`` sets."""
    super().set_view(deterministic=deterministic)
    if hard is not None:
      self.hard = hard


class VCRNN(_VC):
  """:func:`vcrnn_jax.vc.vcrnn` as an NNX module (VCRNN paper Eq. 7, 11-13).

  The per-step output is a :class:`vcrnn_jax.vc.VCOutput`. A ``sharpness``
  schedule reads ``self.step`` (:class:`Step`, 0 until :func:`set_step` sets
  it); ``model.eval()`` keeps the soft mask at that step's sharpness, and
  ``nnx.view(model, hard=True)`` (or ``set_attributes(hard=True)``) runs the
  hard inference path on the same params.

  Example::

    cell = vnnx.VCRNN(8, 8, sharpness=vc.paper_sharpness(100),
                      rngs=nnx.Rngs(0))
    vnnx.set_step(cell, 250)                   # sharpness 0.3
    out = vnnx.RNN(cell)(jnp.ones((2, 5, 8)))  # out.m: (2, 5)
    fast = nnx.view(cell, hard=True)           # same params, hard path
  """

  def __init__(
      self, in_features: int, hidden_features: int, *,
      sharpness: Any = _VCRNN.sharpness,
      epsilon: float = _VCRNN.epsilon,
      scheduler_bias: float = _VCRNN.scheduler_bias,
      scheduler_init: Initializer = _VCRNN.scheduler_init,
      hard: bool = _VCRNN.hard,
      block_sizes: Any = _VCRNN.block_sizes,
      compact_rows: int | None = _VCRNN.compact_rows,
      kernel_init: Initializer = _VCRNN.kernel_init,
      recurrent_kernel_init: Initializer = _VCRNN.recurrent_kernel_init,
      bias_init: Initializer = _VCRNN.bias_init,
      param_dtype: Any = _VCRNN.param_dtype,
      deterministic: bool = False, rngs: nnx.Rngs):
    self._vc_setup(vc.vcrnn, hidden_features, locals(), in_features, rngs,
                   deterministic)

  def make_cell(self) -> Cell:
    return vc.vcrnn(self.hidden_features, **factory_options(self, vc.vcrnn))


class VCGRU(_VC):
  """:func:`vcrnn_jax.vc.vcgru` as an NNX module (VCRNN paper Eq. 7, 14-16);
  everything else as :class:`VCRNN`."""

  def __init__(
      self, in_features: int, hidden_features: int, *,
      sharpness: Any = _VCGRU.sharpness,
      epsilon: float = _VCGRU.epsilon,
      scheduler_bias: float = _VCGRU.scheduler_bias,
      scheduler_init: Initializer = _VCGRU.scheduler_init,
      hard: bool = _VCGRU.hard,
      block_sizes: Any = _VCGRU.block_sizes,
      compact_rows: int | None = _VCGRU.compact_rows,
      kernel_init: Initializer = _VCGRU.kernel_init,
      recurrent_kernel_init: Initializer = _VCGRU.recurrent_kernel_init,
      bias_init: Initializer = _VCGRU.bias_init,
      param_dtype: Any = _VCGRU.param_dtype,
      deterministic: bool = False, rngs: nnx.Rngs):
    self._vc_setup(vc.vcgru, hidden_features, locals(), in_features, rngs,
                   deterministic)

  def make_cell(self) -> Cell:
    return vc.vcgru(self.hidden_features, **factory_options(self, vc.vcgru))


# ----------------------------------------------------------------------------
# The wrappers: they hold the modules they wrap under the pure tree's names.


def _check_module(owner: str, cell: Any) -> None:
  if not isinstance(cell, CellModule):
    raise ValueError(f'{owner} wraps a vcrnn_jax.nnx module, got '
                     f'{type(cell).__name__}.')


class Stack(CellModule):
  """:func:`vcrnn_jax.cells.stack` of other modules as one module.

  ``layers`` (bottom first) are built for the widths they will read: the
  first for the stack's input, each other for the output of the one below.
  They are held as ``layer_0``, ``layer_1``, ... (the pure params' names).
  With ``dropout`` between layers, or a layer that draws dropout, the stack
  draws the one key per call its pure cell folds for each layer, from a
  stream forked from ``rngs``; otherwise ``rngs`` may be left out (the
  stack has no params of its own). The carry is the tuple of the layers'
  carries, each from its own ``initialize_carry``.

  Example::

    rngs = nnx.Rngs(0)
    cell = vnnx.Stack([vnnx.LSTM(9, 32, rngs=rngs),
                       vnnx.LSTM(32, 32, rngs=rngs)], dropout=0.2, rngs=rngs)
    out = vnnx.RNN(cell)(jnp.ones((2, 5, 9)))  # out.output: (2, 5, 32)
  """

  def __init__(self, layers: Sequence[CellModule], *,
               dropout: float = _STACK.dropout,
               deterministic: bool = False, rngs: nnx.Rngs | None = None):
    layers = tuple(layers)
    if not layers or not all(isinstance(m, CellModule) for m in layers):
      raise ValueError('Stack needs a non-empty sequence of vcrnn_jax.nnx '
                       f'modules, got {layers!r}.')
    self.num_layers = len(layers)
    self.dropout = dropout
    for i, layer in enumerate(layers):
      setattr(self, f'layer_{i}', layer)
    self._setup(layers[0].in_features, rngs, deterministic,
                wrapped=[f'layer_{i}' for i in range(len(layers))])

  @property
  def layers(self) -> tuple:
    return tuple(getattr(self, f'layer_{i}') for i in range(self.num_layers))

  def _uses_key(self) -> bool:
    # pylint: disable=protected-access
    return bool(self.dropout) or any(m._uses_key() for m in self.layers)

  def _step_variable(self) -> Step | None:
    # pylint: disable=protected-access
    steps = [m._step_variable() for m in self.layers]
    return next((s for s in steps if s is not None), None)

  def make_cell(self) -> Cell:
    return cells.stack([m.make_cell() for m in self.layers],
                       dropout=self.dropout)

  def initialize_carry(self, input_shape: tuple,
                       rngs: nnx.Rngs | nnx.RngStream | None = None,
                       carry_init: Initializer | None = None) -> Any:
    batch_shape = self._batch_shape(input_shape)
    return tuple(m.initialize_carry(batch_shape + (m.in_features,), rngs,
                                    carry_init) for m in self.layers)


def _check_flagged(owner: str, cell: Any) -> None:
  """``cell`` is a module that can read an input plus the first-step flag."""
  _check_module(owner, cell)
  if cell.in_features < 2:
    raise ValueError(
        f'{owner}: the wrapped cell reads the input plus the first-step '
        f'flag, so it needs in_features >= 2 (input + 1), got '
        f'{cell.in_features}.')


def _flag_hint(owner: str, cell: 'CellModule', got: tuple) -> str:
  """What an input-width error adds for a wrapper that appends the flag."""
  width = cell.in_features
  build = f'; for {got[0]} features build it with in_features={got[0] + 1}'
  return (f' ({owner} appends a first-step flag to its input, so the '
          f'wrapped cell, built with in_features={width}, reads '
          f'{width - 1} features{build if got else ""})')


class _Flagged(CellModule):
  """A wrapper that feeds its cell ``[x; flag]`` (ACT's Eq. 3): the cell is
  built for one input more than the wrapper reads. Its carry is the
  cell's."""

  def _check_flagged(self, cell: Any) -> None:
    _check_flagged(type(self).__name__, cell)

  def _input_hint(self, got: tuple) -> str:
    return _flag_hint(type(self).__name__, self.cell, got)

  def _uses_key(self) -> bool:
    return self.cell._uses_key()  # pylint: disable=protected-access

  def _step_variable(self) -> Step | None:
    return self.cell._step_variable()  # pylint: disable=protected-access

  def initialize_carry(self, input_shape: tuple,
                       rngs: nnx.Rngs | nnx.RngStream | None = None,
                       carry_init: Initializer | None = None) -> Any:
    return self.cell.initialize_carry(input_shape, rngs, carry_init)


class ACT(_Flagged):
  """:func:`vcrnn_jax.act.adaptive` around another module.

  ``cell`` is any module of this file, ACT included, built for the input
  plus ACT's first-step flag (Eq. 3): ``in_features + 1`` inputs, so the ACT
  module reads ``cell.in_features - 1``. It is held as ``self.cell`` (the
  pure params' ``'cell'`` entry); the ACT module adds ``output`` (when
  ``output_size`` is given) and ``halting``. The other arguments are
  ``adaptive``'s. The per-step output is an :class:`vcrnn_jax.act.ACTOutput`;
  the carry is the wrapped cell's. The wrapped cell's dropout and training
  step reach it through the ACT module's context. An input of another width
  is a one-line :class:`vcrnn_jax.core.InputSizeError` that states this
  rule.

  Example::

    rngs = nnx.Rngs(0)
    cell = vnnx.ACT(vnnx.LSTM(4 + 1, 16, rngs=rngs), output_size=10,
                    max_steps=20, rngs=rngs)           # reads 4 features
    out = vnnx.RNN(cell)(jnp.ones((2, 5, 4)), seq_lengths=jnp.array([5, 3]))
    out.output, out.ponder                             # (2, 5, 10), (2, 5)
  """

  def __init__(
      self, cell: CellModule, output_size: int | None = None, *,
      max_steps: int = _ACT.max_steps,
      epsilon: float = _ACT.epsilon,
      halting_bias: float = _ACT.halting_bias,
      halt_features: Callable[[Any, jax.Array], jax.Array] | None = (
          _ACT.halt_features),
      loop: loops.LoopConfig | str = _ACT.loop,
      kernel_init: Initializer = _ACT.kernel_init,
      param_dtype: Any = _ACT.param_dtype,
      deterministic: bool = False, rngs: nnx.Rngs):
    self._check_flagged(cell)
    self.cell = cell
    self.output_size = output_size
    _store(self, act.adaptive, locals())
    self._setup(cell.in_features - 1, rngs, deterministic, wrapped=['cell'])

  def make_cell(self) -> Cell:
    return act.adaptive(self.cell.make_cell(), self.output_size,
                        **factory_options(self, act.adaptive))


class PonderNet(_Flagged):
  """:func:`vcrnn_jax.ponder.pondernet` around another module.

  ``cell`` is any module of this file, built for the input plus ACT's
  first-step flag: ``in_features + 1`` inputs, so the PonderNet module reads
  ``cell.in_features - 1``. It is held as ``self.cell`` (the pure params'
  ``'cell'`` entry); the PonderNet module adds ``output`` and ``halting``.
  The other arguments are ``pondernet``'s. The per-step output is a
  :class:`vcrnn_jax.ponder.PonderOutput`; the carry is the wrapped cell's.
  The wrapped cell's dropout and training step reach it through the
  PonderNet module's context.

  ``inference='sample'`` draws the halting from a key per call, taken as the
  modules take their dropout keys: from a ``'dropout'`` stream forked from
  ``rngs`` at construction (so choose ``'sample'`` when building the module),
  and only while ``deterministic`` is False (``model.eval()`` turns it off;
  pass ``context=Context(key=...)`` then). That key is also the wrapped
  cell's dropout key, as in the pure cell. ``'train'`` and ``'median'`` need
  no key.

  Example::

    rngs = nnx.Rngs(0)
    cell = vnnx.PonderNet(vnnx.GRU(4 + 1, 16, rngs=rngs), output_size=1,
                          max_steps=5, rngs=rngs)      # reads 4 features
    out = vnnx.RNN(cell)(jnp.ones((2, 3, 4)))
    out.output, out.probs                              # (2, 3, 1), (2, 3, 5)
  """

  def __init__(
      self, cell: CellModule, output_size: int = 1, *,
      max_steps: int = _PONDERNET.max_steps,
      epsilon: float = _PONDERNET.epsilon,
      halting_bias: float = _PONDERNET.halting_bias,
      inference: str = _PONDERNET.inference,
      loop: loops.LoopConfig | str = _PONDERNET.loop,
      kernel_init: Initializer = _PONDERNET.kernel_init,
      param_dtype: Any = _PONDERNET.param_dtype,
      deterministic: bool = False, rngs: nnx.Rngs):
    self._check_flagged(cell)
    self.cell = cell
    self.output_size = output_size
    _store(self, ponder.pondernet, locals())
    self._setup(cell.in_features - 1, rngs, deterministic, wrapped=['cell'])

  def _uses_key(self) -> bool:
    return self.inference == 'sample' or super()._uses_key()

  def make_cell(self) -> Cell:
    return ponder.pondernet(self.cell.make_cell(), self.output_size,
                            **factory_options(self, ponder.pondernet))


class Repeat(_Flagged):
  """:func:`vcrnn_jax.repeat.repeat` around another module.

  ``cell`` is any module of this file, built for the input plus ACT's
  first-step flag: ``in_features + 1`` inputs, so the Repeat module reads
  ``cell.in_features - 1``. It is held as ``self.cell`` (the pure params'
  only entry, ``'cell'``); ``repetitions`` is ``repeat``'s. The per-step
  output is the wrapped cell's after the last repetition; the carry is the
  wrapped cell's. The wrapped cell's dropout and training step reach it
  through the Repeat module's context; ``rngs`` is needed only where the
  wrapped cell draws dropout (Repeat has no params of its own).

  Example::

    rngs = nnx.Rngs(0)
    cell = vnnx.Repeat(vnnx.GRU(4 + 1, 16, rngs=rngs), repetitions=3,
                       rngs=rngs)                      # reads 4 features
    ys = vnnx.RNN(cell)(jnp.ones((2, 5, 4)))           # (2, 5, 16)
  """

  def __init__(self, cell: CellModule, repetitions: int = 1, *,
               deterministic: bool = False, rngs: nnx.Rngs | None = None):
    self._check_flagged(cell)
    self.cell = cell
    self.repetitions = repetitions
    self._setup(cell.in_features - 1, rngs, deterministic, wrapped=['cell'])

  def make_cell(self) -> Cell:
    return repeat.repeat(self.cell.make_cell(), self.repetitions)


class Skip(CellModule):
  """:func:`vcrnn_jax.skip.skip` around another module.

  ``cell`` is any module of this file, built for the input itself (Skip adds
  no flag): the Skip module reads ``cell.in_features``. It is held as
  ``self.cell`` (the pure params' ``'cell'`` entry); the Skip module adds
  ``update`` (the gate's ``kernel`` and ``bias``). The other arguments are
  ``skip``'s. The per-step output is a :class:`vcrnn_jax.skip.SkipOutput`;
  the carry is a :class:`vcrnn_jax.skip.SkipState` (the wrapped cell's
  carry, from its ``initialize_carry``, the update probability and the last
  output). The wrapped cell's dropout and training step reach it through
  the Skip module's context. ``nnx.view(model, hard=True)`` (or
  ``set_attributes(hard=True)``) runs the hard inference path on the same
  params.

  Example::

    rngs = nnx.Rngs(0)
    cell = vnnx.Skip(vnnx.LSTM(4, 16, rngs=rngs), rngs=rngs)
    out = vnnx.RNN(cell)(jnp.ones((2, 5, 4)))
    out.output, out.update                             # (2, 5, 16), (2, 5)
  """

  def __init__(
      self, cell: CellModule, *,
      update_bias: float = _SKIP.update_bias,
      features: Callable[[Any, jax.Array], jax.Array] | None = _SKIP.features,
      hard: bool = _SKIP.hard,
      compact_rows: int | None = _SKIP.compact_rows,
      kernel_init: Initializer = _SKIP.kernel_init,
      param_dtype: Any = _SKIP.param_dtype,
      deterministic: bool = False, rngs: nnx.Rngs):
    _check_module('Skip', cell)
    self.cell = cell
    _store(self, skip.skip, locals())
    self._setup(cell.in_features, rngs, deterministic, wrapped=['cell'])

  def _uses_key(self) -> bool:
    return self.cell._uses_key()  # pylint: disable=protected-access

  def _step_variable(self) -> Step | None:
    return self.cell._step_variable()  # pylint: disable=protected-access

  def make_cell(self) -> Cell:
    return skip.skip(self.cell.make_cell(), **factory_options(self, skip.skip))

  def initialize_carry(self, input_shape: tuple,
                       rngs: nnx.Rngs | nnx.RngStream | None = None,
                       carry_init: Initializer | None = None) -> Any:
    state = super().initialize_carry(input_shape)
    return state._replace(
        cell=self.cell.initialize_carry(input_shape, rngs, carry_init))

  def set_view(self, deterministic: bool | None = None,
               hard: bool | None = None) -> None:
    """What ``nnx.view(model, deterministic=..., hard=...)`` sets."""
    super().set_view(deterministic=deterministic)
    if hard is not None:
      self.hard = hard


class _Made(CellModule):
  """The base of the modules :func:`module_for` makes from a registry row.

  The subclass sets ``_factory`` (a staticmethod), ``_positional`` (the
  factory's positional arguments after ``cell``), ``_flagged`` (the row's)
  and ``_signature`` (the factory's); the wrapped module is ``self.cell``
  (the pure params' ``'cell'`` entry). Its dropout and training step reach
  it through this module's context. The carry is the wrapped module's when
  the pure wrapper keeps its cell's state (ACT, PonderNet, Repeat-RNN), else
  the pure wrapper's initial state.
  """

  _factory: Callable[..., Cell]
  _positional: tuple[str, ...] = ()
  _flagged: bool = False
  _signature: inspect.Signature

  def __init__(self, cell: CellModule, *args: Any,
               deterministic: bool = False, rngs: nnx.Rngs | None = None,
               **options: Any):
    owner = type(self).__name__
    try:
      bound = self._signature.bind(cell, *args, **options)
    except TypeError as e:
      raise TypeError(f'{owner}.__init__() {e}') from None
    bound.apply_defaults()
    (_check_flagged if self._flagged else _check_module)(owner, cell)
    self.cell = cell
    for name, value in list(bound.arguments.items())[1:]:
      setattr(self, name, value)
    self._setup(cell.in_features - self._flagged, rngs, deterministic,
                wrapped=['cell'])

  def _wrap(self, cell: Cell) -> Cell:
    return self._factory(cell, *(getattr(self, n) for n in self._positional),
                         **factory_options(self, self._factory))

  def make_cell(self) -> Cell:
    return self._wrap(self.cell.make_cell())

  def _uses_key(self) -> bool:
    return self.cell._uses_key()  # pylint: disable=protected-access

  def _step_variable(self) -> Step | None:
    return self.cell._step_variable()  # pylint: disable=protected-access

  def _input_hint(self, got: tuple) -> str:
    if not self._flagged:
      return ''
    return _flag_hint(type(self).__name__, self.cell, got)

  def initialize_carry(self, input_shape: tuple,
                       rngs: nnx.Rngs | nnx.RngStream | None = None,
                       carry_init: Initializer | None = None) -> Any:
    inner = self.cell.make_cell()
    if self._wrap(inner).initial_state is inner.initial_state:
      return self.cell.initialize_carry(input_shape, rngs, carry_init)
    return super().initialize_carry(input_shape)


def module_for(entry: 'registry.Entry | str') -> type[CellModule]:
  """The NNX module of a row of :data:`vcrnn_jax.registry.METHODS`.

  :func:`vcrnn_jax.linen.module_for`'s rule: the module the row names when
  this file has it (written here, or made at import for a row of the
  table), otherwise, for a wrapper, a module made from the factory. That
  one is built as ``Module(cell, *args, deterministic=False, rngs=None,
  **options)``: ``cell`` the module it wraps (built with ``in_features +
  1`` inputs for a ``flagged`` row, as for :class:`ACT`; the module then
  reads one feature fewer), the factory's other arguments under their
  names, with its defaults (:class:`vcrnn_jax.registry.Entry`'s rule), and
  ``rngs`` to draw the params the wrapper adds. Its params are the pure
  wrapper's (the wrapped module's under ``cell``). A method that draws
  from ``context.key`` itself (PonderNet's ``inference='sample'``) is given
  its key with the call, ``module(carry, x, Context(key=...))``: the module
  draws a key of its own only where the wrapped module draws dropout.

  Args:
    entry: a row (in the table or not) or the name of one in the table.

  Returns:
    The module class, named ``entry.module``.

  Raises:
    ValueError: a row with no module here that is not a wrapper.

  Example:

    >>> import jax.numpy as jnp
    >>> from flax import nnx
    >>> from vcrnn_jax import nnx as vnnx, registry
    >>> vnnx.module_for('act') is vnnx.ACT          # written here
    True
    >>> row = registry.Entry(registry.METHODS['repeat'].factory, 'wrapper',
    ...                      'Repeat-RNN again', 'MyRepeat', flagged=True)
    >>> MyRepeat = vnnx.module_for(row)             # made from the factory
    >>> rngs = nnx.Rngs(0)
    >>> cell = MyRepeat(vnnx.GRU(3 + 1, 8, rngs=rngs), repetitions=2)
    >>> vnnx.RNN(cell)(jnp.ones((2, 5, 3))).shape
    (2, 5, 8)
  """
  if isinstance(entry, str):
    if entry not in registry.METHODS:
      raise ValueError(f'module_for: entry must be a registry.Entry or one '
                       f'of {sorted(registry.METHODS)}, got {entry!r}.')
    entry = registry.METHODS[entry]
  row = next((e for e in registry.METHODS.values()
              if e.module == entry.module), None)
  if row is not None and row.factory is entry.factory:
    return globals()[entry.module]
  return _make_module(entry)


def _make_module(entry: 'registry.Entry') -> type[CellModule]:
  """A :class:`_Made` module for the wrapper row ``entry``."""
  factory = entry.factory
  _, positional = registry.wrapper_arguments(entry, 'nnx.module_for')
  signature = inspect.signature(factory)

  def __init__(self, *args, **kwargs):
    _Made.__init__(self, *args, **kwargs)

  kind = inspect.Parameter.KEYWORD_ONLY
  cell, *rest = signature.parameters.values()
  __init__.__signature__ = signature.replace(
      parameters=[inspect.Parameter('self', inspect.Parameter.POSITIONAL_ONLY),
                  cell.replace(annotation=CellModule), *rest,
                  inspect.Parameter('deterministic', kind, default=False,
                                    annotation=bool),
                  inspect.Parameter('rngs', kind, default=None,
                                    annotation=nnx.Rngs | None)],
      return_annotation=None)
  name = f'{factory.__module__}.{factory.__qualname__}'
  namespace = dict(
      __init__=__init__, __module__=__name__, __qualname__=entry.module,
      _factory=staticmethod(factory), _positional=positional,
      _flagged=bool(entry.flagged), _signature=signature,
      __doc__=(f':func:`{name}` around another module (made from its '
               'registry row by :func:`module_for`): the arguments are '
               '``cell`` and the factory\'s, with its defaults.'))
  return types.new_class(entry.module, (_Made,), {},
                         lambda ns: ns.update(namespace))


# ----------------------------------------------------------------------------
# Running a module over time.


class RNN(nnx.Module):
  """Runs a :class:`CellModule` over time, honouring ``seq_lengths``.

  The counterpart of ``flax.nnx.RNN`` for this library's modules, with its
  call signature (``reverse``, ``keep_order`` and ``unroll`` not offered)
  and the cell held as ``self.cell`` as there. It runs the cell with
  :func:`vcrnn_jax.unroll`: steps ``t >= seq_lengths[b]`` are padding, the
  cell is told so (``context.active`` False: ACT takes one step, EI-REHN no
  micro-layer, VC updates nothing), row ``b``'s carry is kept and its outputs
  are zero, so the returned carry is the one after each row's last real
  step. The cell's context is built once per call: one dropout key per
  sequence (masks shared over time) and the cell's training step.

  Example::

    rngs = nnx.Rngs(0)
    rnn = vnnx.RNN(vnnx.ACT(vnnx.GRU(5, 16, rngs=rngs), rngs=rngs))
    out = rnn(jnp.ones((2, 5, 4)), seq_lengths=jnp.array([5, 3]))
    out.ponder                     # (2, 5), 0 on the two padded steps
  """

  def __init__(self, cell: CellModule, *, time_major: bool = False,
               return_carry: bool = False):
    if not isinstance(cell, CellModule):
      raise ValueError('RNN runs a vcrnn_jax.nnx module (use flax.nnx.RNN '
                       f'for other cells), got {type(cell).__name__}.')
    self.cell = cell
    self.time_major = time_major
    self.return_carry = return_carry

  def __call__(self, inputs: jax.Array, *, initial_carry: Any = None,
               seq_lengths: jax.Array | None = None,
               return_carry: bool | None = None,
               time_major: bool | None = None,
               rngs: nnx.Rngs | nnx.RngStream | None = None,
               context: Context | None = None):
    """Applies the cell to every step of ``inputs``.

    Args:
      inputs: ``[*batch, time, features]`` (``[time, *batch, features]``
        with ``time_major``).
      initial_carry: the carry to start from (leaves ``[*batch, ...]``);
        default the cell's ``initialize_carry``.
      seq_lengths: optional ``[*batch]`` integer lengths in ``[0, time]``.
      return_carry: return ``(carry, outputs)``; default ``self.return_carry``.
      time_major: default ``self.time_major``.
      rngs: what the cell's ``initialize_carry`` draws from, where the cell
        has a ``carry_init`` (as ``flax.nnx.RNN``'s ``rngs``).
      context: a :class:`vcrnn_jax.core.Context` whose fields replace the
        cell's own (``step``, ``key``); an ``active`` mask ``[*batch]`` is
        combined with the one from ``seq_lengths``.

    Returns:
      ``outputs`` (leaves ``[*batch, time, ...]``, time first with
      ``time_major``), or ``(carry, outputs)``.
    """
    return_carry = self.return_carry if return_carry is None else return_carry
    time_major = self.time_major if time_major is None else time_major
    if inputs.ndim < 2:
      raise ValueError(
          f'RNN: inputs must be [*batch, time, features], got shape '
          f'{tuple(inputs.shape)}.')
    # pylint: disable-next=protected-access
    self.cell._check_inputs(inputs.shape, f'RNN({type(self.cell).__name__})',
                            '[*batch, time, {}]')
    if time_major:
      inputs = jnp.moveaxis(inputs, 0, -2)
    batch_shape = inputs.shape[:-2]
    time, features = inputs.shape[-2:]
    size = math.prod(batch_shape)
    cell = self.cell.make_cell()
    if initial_carry is None:
      initial_carry = self.cell.initialize_carry(batch_shape + (features,),
                                                 rngs)
    carry = _as_state(type(self.cell).__name__, cell, initial_carry,
                      batch_shape, size)
    lengths = None
    if seq_lengths is not None:
      lengths = jnp.asarray(seq_lengths)
      if (tuple(lengths.shape) != tuple(batch_shape)
          or not jnp.issubdtype(lengths.dtype, jnp.integer)):
        raise ValueError(
            f'RNN: seq_lengths must be integers of shape [*batch]='
            f'{tuple(batch_shape)}, got {lengths.dtype} '
            f'{tuple(lengths.shape)}.')
      lengths = lengths.reshape(size)
    # pylint: disable=protected-access
    context = self.cell._context(context, batch_shape, size)
    carry, ys = unroll(cell, to_params(self.cell), carry,
                       inputs.reshape((size, time, features)), lengths,
                       context=context)

    def restore(a):
      if time_major:
        return jnp.moveaxis(a, 1, 0).reshape((time,) + batch_shape
                                             + a.shape[2:])
      return a.reshape(batch_shape + (time,) + a.shape[2:])

    ys = jax.tree_util.tree_map(restore, ys)
    carry = restore_batch(carry, batch_shape)
    return (carry, ys) if return_carry else ys


# ----------------------------------------------------------------------------
# Adaptive depth around a Transformer block (vcrnn_jax.depth).


def _reseed(module: nnx.Module, key: jax.Array) -> None:
  """Every rng stream inside ``module`` reseeded from ``key``.

  One key per stream name, so a block's ``nnx.Dropout`` (whose stream is
  named ``'dropout'``, or ``'default'`` when built from ``nnx.Rngs(0)``)
  draws a fresh mask at every depth step, though the loop applies it as a
  pure function whose rng state it cannot carry from step to step.
  """
  tags = sorted({node.key.tag for _, node in nnx.iter_graph(module)
                 if isinstance(node, nnx.RngStream)})
  if tags:
    nnx.reseed(module, **{tag: jax.random.fold_in(key, i)
                          for i, tag in enumerate(tags)})


class _Depth(nnx.Module):
  """Adaptive depth around the NNX module ``block`` (held as
  ``self.block``); subclasses give the pure factory and its options."""

  _factory: Callable[..., depth.Depth]
  # Options stored under another name: the ``halting`` rule of
  # PerTokenDepth and PerExampleDepth would shadow the halting unit's
  # params, ``self.halting``.
  _renamed: Mapping[str, str] = MappingProxyType({})

  def _setup(self, block: nnx.Module, features: int,
             options: Mapping[str, Any], deterministic: bool,
             rngs: nnx.Rngs) -> None:
    """Stores the options, draws the halting unit (or the routers) as the
    pure ``init``."""
    owner = type(self).__name__
    if not isinstance(block, nnx.Module):
      raise ValueError(f'{owner}: block must be an nnx.Module, got '
                       f'{type(block).__name__}.')
    self.block = block
    for name in utils.keyword_options(self._factory):
      setattr(self, self._renamed.get(name, name), options[name])
    kind = type(block).__name__
    readout = getattr(self, 'readout', None)
    if isinstance(readout, str) and not callable(getattr(block, readout,
                                                         None)):
      raise ValueError(f'{owner}: the block {kind} has no method '
                       f'{readout!r}.')
    for method in ('__call__',) + (() if readout is None else (readout,)):
      label = method if isinstance(method, str) else method.__name__
      linen.check_block_call(
          owner, getattr(block, method) if isinstance(method, str)
          else functools.partial(method, block), f'{kind}.{label}')
    self.features = check_positive_int('features', features)
    self.deterministic = bool(deterministic)
    self.rngs = _own_stream(rngs, owner)
    params = self.make_depth().init(_stream(rngs, 'params', owner)(),
                                    self.features, to_params(block))
    _set_params(self, {k: v for k, v in params.items() if k != 'block'})

  def make_depth(self) -> depth.Depth:
    """The pure :class:`vcrnn_jax.depth.Depth` this module computes (a
    :class:`vcrnn_jax.routing.Routing` for :class:`PerTokenRouting`).

    Its ``apply(to_params(module), h, mask, key=..., extra=...)`` is the
    module's call with the same arguments. At every depth step the block
    is rebuilt from its current state with ``nnx.merge`` (the loop calls it
    as a pure function of its params) and, given a key, its rng streams are
    reseeded from ``context.key``; its other state is read, and what the
    block writes to it (batch statistics, rng counts) is discarded. With
    ``deterministic`` the block gets no key (``context.key`` None), whatever
    key ``apply`` gets.
    """
    graphdef, _, rest = nnx.split(self.block, nnx.Param, ...)
    deterministic = self.deterministic

    def pure(method):
      def fn(params, h, context):
        # Fresh Variables of the loop's trace (copy): reseeding writes to
        # them, which nnx refuses for those of the caller's trace.
        module = nnx.merge(graphdef, params, rest, copy=True)
        if deterministic:
          context = context._replace(key=None)
        elif context.key is not None:
          _reseed(module, context.key)
        return linen.call_with_context(
            getattr(module, method) if isinstance(method, str)
            else functools.partial(method, module), h, context)
      return fn

    options = {name: getattr(self, self._renamed.get(name, name))
               for name in utils.keyword_options(self._factory)}
    if options.get('readout') is not None:
      options['readout'] = pure(options['readout'])
    return self._factory(pure('__call__'), **options)

  def __call__(self, h: jax.Array, mask: jax.Array | None = None, *,
               extra: Any = None, key: jax.Array | None = None
               ) -> tuple[jax.Array, Any]:
    """Runs the block to each position's (or example's) depth.

    Args:
      h: ``[batch, time, features]``.
      mask: ``[batch, time]`` bool, the real positions; None: no padding.
      extra: a pytree of ``[batch, ...]`` leaves handed to the block in its
        context (an encoder's output for cross-attention).
      key: the key the block's per-step keys are folded from and PonderNet's
        sampled exits drawn from; None: one drawn from ``self.rngs`` unless
        ``deterministic``.

    Returns:
      ``(h, output)`` as the pure ``apply``.
    """
    owner = type(self).__name__
    h = jnp.asarray(h)
    if h.ndim == 3 and h.shape[-1] != self.features:
      raise ValueError(
          f'{owner}: h has {h.shape[-1]} features, the module was built '
          f'with features={self.features}; build it with '
          f'features={h.shape[-1]} (and a block of that width).')
    if key is None and not self.deterministic:
      key = self.rngs()
    params = {'block': {}, **to_params(self)}   # a block without params
    return self.make_depth().apply(params, h, mask, key=key, extra=extra,
                                   caller=owner)

  def set_view(self, deterministic: bool | None = None) -> None:
    """What ``nnx.view(model, deterministic=...)`` sets (flax >= 0.12)."""
    if deterministic is not None:
      self.deterministic = deterministic


class PerTokenDepth(_Depth):
  """:func:`vcrnn_jax.depth.per_token` around an NNX block: Universal
  Transformer halting, ACT per position (or PonderNet's halting per
  position, ``halting='pondernet'``).

  ``block`` is any ``nnx.Module`` whose ``__call__`` maps ``h`` ``[batch,
  time, features]`` to the same shape and dtype; it is given the depth
  step's :class:`vcrnn_jax.depth.BlockContext` as ``context=`` when its
  ``__call__`` has a parameter of that name, and ``h`` alone otherwise
  (:func:`vcrnn_jax.linen.call_with_context`): a block that attends should
  take it and mask its keys with ``context.mask``. ``features`` is ``h``'s
  width (the halting unit is drawn at construction, as NNX modules draw
  their params); the other arguments are ``per_token``'s, the halting rule
  ``halting`` kept as ``self.halting_rule`` (``self.halting`` holds the
  halting unit's params), as in :class:`PerExampleDepth`.

  **Call.** ``module(h, mask=None, *, extra=None, key=None)``, ``h``
  ``[batch, time, features]``, ``mask`` ``[batch, time]`` bool (None: no
  padding), ``extra`` a pytree of ``[batch, ...]`` leaves for the block's
  context, returns ``(h, output)`` as the pure ``apply`` (a
  :class:`~vcrnn_jax.depth.TokenDepthOutput` here).

  **Params.** The block is held as ``self.block`` and the halting unit as
  ``self.halting``, so :func:`to_params` gives the pure params tree
  (``{'block': ..., 'halting': {'kernel', 'bias'}}``) and
  ``module.make_depth().apply(to_params(module), h, mask)`` is the module's
  result. Inside the loop the block runs as a pure function of its params
  (``nnx.split`` / ``nnx.merge``, :meth:`make_depth`), so state the block
  writes during a call (batch statistics) is not kept.

  **Dropout.** Unless ``deterministic`` (``model.eval()`` sets it, on the
  block's own ``nnx.Dropout`` too), the module draws one key per call from
  a ``'dropout'`` stream forked from ``rngs`` (``'default'`` when there is
  none) or takes ``key=``; at depth step ``n`` the block's rng streams are
  reseeded from ``fold_in(key, n)``, which is also ``context.key``, so an
  ``nnx.Dropout(rate, rngs=rngs)`` inside the block works as it is.

  **Widths, dtypes, errors.** An ``h`` of another width than ``features``
  is a one-line error naming the module; it computes in ``dtype`` as
  :func:`vcrnn_jax.depth.per_token` does (None: the halting unit's param
  dtype, with a warning when ``h`` is another float); a block that needs
  an argument other than ``h`` and ``context`` is refused at construction
  (:func:`vcrnn_jax.linen.check_block_call`).

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from flax import nnx
    >>> from vcrnn_jax import depth, nnx as vnnx
    >>> class Block(nnx.Module):
    ...   def __init__(self, features, *, rngs):
    ...     self.attention = nnx.MultiHeadAttention(
    ...         2, features, decode=False, rngs=rngs)
    ...   def __call__(self, h, context):        # a depth.BlockContext
    ...     mask = nnx.make_attention_mask(context.mask, context.mask)
    ...     return h + self.attention(h, mask=mask)
    >>> rngs = nnx.Rngs(0)
    >>> ut = vnnx.PerTokenDepth(Block(8, rngs=rngs), 8, max_depth=4,
    ...                         rngs=rngs)
    >>> h = jnp.ones((2, 3, 8))                   # [batch, time, features]
    >>> mask = jnp.array([[True, True, True], [True, True, False]])
    >>> out_h, out = ut(h, mask)
    >>> sorted(vnnx.to_params(ut)), out_h.shape, out.steps[1, 2].item()
    (['block', 'halting'], (2, 3, 8), 0)
  """
  _factory = staticmethod(depth.per_token)
  _renamed = MappingProxyType({'halting': 'halting_rule'})

  def __init__(
      self, block: nnx.Module, features: int, *,
      max_depth: int,
      halting: str = _PER_TOKEN.halting,
      epsilon: float | None = _PER_TOKEN.epsilon,
      halting_bias: float | None = _PER_TOKEN.halting_bias,
      inference: str = _PER_TOKEN.inference,
      halting_reads: str | None = _PER_TOKEN.halting_reads,
      loop: loops.LoopConfig | str = _PER_TOKEN.loop,
      kernel_init: Initializer = _PER_TOKEN.kernel_init,
      param_dtype: Any = _PER_TOKEN.param_dtype,
      dtype: Any = _PER_TOKEN.dtype,
      deterministic: bool = False, rngs: nnx.Rngs):
    self._setup(block, features, locals(), deterministic, rngs)


class PerExampleDepth(_Depth):
  """:func:`vcrnn_jax.depth.per_example` around an NNX block: PonderNet's
  (or ACT's) halting per example.

  ``block``, ``features``, the params and dropout as in
  :class:`PerTokenDepth`; the other arguments are ``per_example``'s, with
  two differences. ``readout`` is the name of a method of the block (or a
  function ``(block, h, ...)``) that maps the state to each step's
  prediction ``y [batch, ...]``, given ``context=`` by the block's rule;
  its params are the block's. The halting rule ``halting`` is kept as
  ``self.halting_rule``, since ``self.halting`` holds the halting unit's
  params (the pure tree's name).

  The call is :class:`PerTokenDepth`'s; its output an
  :class:`~vcrnn_jax.depth.ExampleDepthOutput`. ``inference='sample'``
  draws the exits from the call's key: drawn from ``rngs`` unless
  ``deterministic``; after ``model.eval()`` pass ``key=``.

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from flax import nnx
    >>> from vcrnn_jax import depth, nnx as vnnx
    >>> class Block(nnx.Module):
    ...   def __init__(self, features, *, rngs):
    ...     self.mix = nnx.Linear(features, features, rngs=rngs)
    ...     self.head = nnx.Linear(features, 2, rngs=rngs)
    ...   def __call__(self, h):                 # no context: no attention
    ...     return h + jnp.tanh(self.mix(h))
    ...   def readout(self, h, context):
    ...     return self.head(depth.masked_mean(h, context.mask))
    >>> rngs = nnx.Rngs(0)
    >>> exit_ = vnnx.PerExampleDepth(Block(4, rngs=rngs), 4, max_depth=3,
    ...                              readout='readout', rngs=rngs)
    >>> _, out = exit_(jnp.ones((2, 5, 4)))
    >>> out.output.shape, out.outputs.shape, out.probs.shape
    ((2, 2), (2, 3, 2), (2, 3))
  """
  _factory = staticmethod(depth.per_example)
  _renamed = MappingProxyType({'halting': 'halting_rule'})

  def __init__(
      self, block: nnx.Module, features: int, *,
      max_depth: int,
      halting: str = _PER_EXAMPLE.halting,
      epsilon: float | None = _PER_EXAMPLE.epsilon,
      halting_bias: float | None = _PER_EXAMPLE.halting_bias,
      inference: str = _PER_EXAMPLE.inference,
      halting_reads: str = _PER_EXAMPLE.halting_reads,
      readout: str | Callable[..., Any] | None = None,
      loop: loops.LoopConfig | str = _PER_EXAMPLE.loop,
      kernel_init: Initializer = _PER_EXAMPLE.kernel_init,
      param_dtype: Any = _PER_EXAMPLE.param_dtype,
      dtype: Any = _PER_EXAMPLE.dtype,
      deterministic: bool = False, rngs: nnx.Rngs):
    self._setup(block, features, locals(), deterministic, rngs)


class PerTokenRouting(_Depth):
  """:func:`vcrnn_jax.routing.per_token` around an NNX block: Mixture-of-
  Recursions capacity routing over the block's recursion steps.

  ``block``, ``features``, dropout and the call as in
  :class:`PerTokenDepth`; the block runs at step ``r`` on the ``k_r``
  gathered tokens of each sequence and its context is a
  :class:`vcrnn_jax.routing.RouteContext` (``mask``: the filler slots;
  ``positions``: the tokens' original positions). The routers are held as
  ``self.router``, so :func:`to_params` gives the pure tree (``{'block':
  ..., 'router': {'kernel', 'bias'}}``); the output is a
  :class:`~vcrnn_jax.routing.RoutingOutput`. The other arguments are
  ``per_token``'s.

  Example:

    >>> import jax, jax.numpy as jnp
    >>> from flax import nnx
    >>> from vcrnn_jax import nnx as vnnx, routing
    >>> class Block(nnx.Module):
    ...   def __init__(self, features, *, rngs):
    ...     self.attention = nnx.MultiHeadAttention(
    ...         2, features, decode=False, rngs=rngs)
    ...   def __call__(self, h, context):        # a routing.RouteContext
    ...     mask = nnx.make_attention_mask(context.mask, context.mask)
    ...     return h + self.attention(h, mask=mask)
    >>> rngs = nnx.Rngs(0)
    >>> mor = vnnx.PerTokenRouting(Block(8, rngs=rngs), 8, max_depth=3,
    ...                            rngs=rngs)
    >>> out_h, out = mor(jnp.ones((2, 6, 8)))
    >>> sorted(vnnx.to_params(mor)), routing.block_tokens(out).tolist()
    (['block', 'router'], [12, 12])
  """
  _factory = staticmethod(routing.per_token)

  def __init__(
      self, block: nnx.Module, features: int, *,
      max_depth: int,
      capacity: float | tuple[float, ...] | None = _ROUTING.capacity,
      gate: str = _ROUTING.gate,
      gate_scale: float | None = _ROUTING.gate_scale,
      selection: str = _ROUTING.selection,
      router_bias: float = _ROUTING.router_bias,
      kernel_init: Initializer = _ROUTING.kernel_init,
      param_dtype: Any = _ROUTING.param_dtype,
      dtype: Any = _ROUTING.dtype,
      deterministic: bool = False, rngs: nnx.Rngs):
    self._setup(block, features, locals(), deterministic, rngs)

# ----------------------------------------------------------------------------
# Params of flax.nnx's own cells.


def lstm_params_to_flax(params: Any) -> dict:
  """Converts :func:`vcrnn_jax.cells.lstm` params to ``flax.nnx.LSTMCell``'s.

  The result is the pure dict of ``nnx.state(cell, nnx.Param)``: gates
  ``ii, if_, ig, io`` (input kernels) and ``hi, hf, hg, ho`` (recurrent
  kernels and the biases), ``nnx.update(cell, nnx.State(...))`` sets it.
  It is :func:`vcrnn_jax.linen.lstm_params_to_flax` with ``flax.nnx``'s
  name ``if_`` for ``if``.
  """
  return {_NNX_GATE_NAMES.get(k, k): v
          for k, v in linen.lstm_params_to_flax(params).items()}


def lstm_params_from_flax(flax_params: Any) -> dict:
  """Inverse of :func:`lstm_params_to_flax`."""
  names = {v: k for k, v in _NNX_GATE_NAMES.items()}
  return linen.lstm_params_from_flax(
      {names.get(k, k): v for k, v in flax_params.items()})


def elman_params_to_flax(params: Any) -> dict:
  """Converts :func:`vcrnn_jax.cells.elman` params to ``flax.nnx.SimpleCell``'s
  (the pure dict of ``nnx.state(cell, nnx.Param)``): ``dense_i`` (input
  kernel and the bias) and ``dense_h`` (recurrent kernel)."""
  return {'dense_i': {'kernel': params['input_kernel'],
                      'bias': params['bias']},
          'dense_h': {'kernel': params['recurrent_kernel']}}


def elman_params_from_flax(flax_params: Any) -> dict:
  """Inverse of :func:`elman_params_to_flax`."""
  return {'input_kernel': flax_params['dense_i']['kernel'],
          'recurrent_kernel': flax_params['dense_h']['kernel'],
          'bias': flax_params['dense_i']['bias']}


_NNX_GATE_NAMES = {'if': 'if_'}


# The table's wrappers that have no module written above: made from their
# rows, so that ``nnx.<module>`` is every row's module.
for _row in registry.METHODS.values():
  if _row.module not in globals():
    globals()[_row.module] = _make_module(_row)
    __all__.append(_row.module)
del _row

"""Names vulture (the dead-code check of `make lint`) cannot see used, each group with why it is live.

Anything not here that vulture reports is dead: delete it. Generated with `vulture ... --make-whitelist`,
then grouped by hand; a name is listed once even where several places define it.
"""

# ruff: noqa: B018, F821
# (this file is read by vulture, never imported: the bare names below are vulture's whitelist format)

# torch calls these by protocol: nn.Module.forward / extra_repr, autograd.Function.forward; submodules are
# attributes that state_dict and the converter's handlers reach by name
_.forward
_.extra_repr
_.fc1_bn
_.fc1_lif
_.fc2_bn
_.fc2_lif

# Lava finds ProcessModels by decorator (@implements) and calls their hooks by name
PyAttentionCoreModel
PySimulatedPyToNxAdapterModel
PySimulatedPyToN3ConvAdapterModel
PySimulatedNxToPyAdapterModel
PySpikeRecorderModel
PyStateRecorderModel
PyBoomModel
PyScaleModel
_.post_guard
_.run_post_mgmt
_.calc_act
_.get_transform_func_fwd
_.get_transform_func_bwd
_._is_running
_._is_started

# registered by decorator in a registry and looked up by key (convert handlers, netx layer readers)
spikformer_handler
sps_handler
block_handler
ssa_handler
dendrites_handler
lrf_handler
mlp_handler
conv2d_handler
maxpool_handler
_cuba
_sdnn
_rf
# NIR import: one mapper per NIR primitive, neuron model and float step (spikeport.nir_import)
_cuba_lif
_if
_threshold
_li
_integrator
_input
_output
_affine
_flatten
_pool
_scale
_neuron
_add

# dispatched by name from recorded events (baselines.activation_trace replays them with getattr)
_.enter_at_next_alloc
_.lif_scratch
_.lif_scratch_end

# fields of typed records: written to JSON by asdict / to_dict and read by users of the reports
act_bits
act_overflows
against
analytic_impl
energy_measured
other_state_bytes
prediction
_.prediction
retained_after
rss_peak_delta
static_energy_J
synops_valued
traffic_source
unit_energy_J
wall_s
working_set
exporter

# the module-level __getattr__ / __dir__ protocol (PEP 562): spikeport.run and RunReport load lazily
__getattr__
__dir__

# public API and documented constants (docs and docstrings cite them; users call them)
MAX_EXACT_SUM
read_metadata

# settings of library objects (reprlib.Repr limits, ONNX Runtime session options, matplotlib 3-D axes, cuDNN)
_.benchmark
_.maxdict
_.maxlevel
_.maxlist
_.maxother
_.maxstring
_.intra_op_num_threads
_.computed_zorder

# protocol arguments: __exit__ (exc, tb), signal handlers, pytest hooks, fixtures and marks, HTMLParser
exc
tb
timeout
pytest_configure
pytest_unconfigure
pytestmark
_no_terminal_width
_under_load
one_thread
umask_022
_.handle_data
_.handle_endtag
_.handle_starttag

# lava_startup.install is called by the spikeport-lava.pth line site.py executes (make setup writes it)
install

# lava.utils.system.Loihi2 reads its class attribute when it selects a partition (the older Lava host selection)
_.preferred_partition

# fields of records written whole to JSON (asdict / vars): the calibration's points, the static energy's power
_.measured_total
_.estimated_static
_.power_W

# the report's per-model records (report/model.py), written whole to JSON: where a figure's static part comes from, and
# the two energies of a ratio
static_label
top_J
bottom_J

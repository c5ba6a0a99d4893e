"""The CPU-safe XLA flags are merged into a user's XLA_FLAGS; the user's own values win."""

from jaxclimate import _xla


def test_user_flags_kept_and_missing_safe_flags_added(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4 --xla_cpu_multi_thread_eigen=true")
    assert _xla.use_cpu_safe_xla_flags()
    merged = _xla.os.environ["XLA_FLAGS"]
    assert merged == (
        "--xla_force_host_platform_device_count=4 --xla_cpu_multi_thread_eigen=true --xla_cpu_enable_concurrency_optimized_scheduler=false"
    )
    assert not _xla.use_cpu_safe_xla_flags()  # nothing left to add
    monkeypatch.delenv("XLA_FLAGS")
    assert _xla.use_cpu_safe_xla_flags() and _xla.os.environ["XLA_FLAGS"] == _xla.CPU_SAFE_XLA_FLAGS


def test_a_flag_is_removed_by_name_only():
    flags = "--xla_force_host_platform_device_count=4 --xla_force_host_platform_device_count_x=1 --a"
    assert _xla.without_flag(flags, "xla_force_host_platform_device_count") == "--xla_force_host_platform_device_count_x=1 --a"

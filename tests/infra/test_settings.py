"""The one settings class: env prefix, empty values, and the timeout order that keeps redelivery safe."""

import pytest
from pydantic import ValidationError

from infra.settings import Settings


def test_fields_come_from_toolout_prefixed_env(monkeypatch) -> None:
    monkeypatch.setenv("TOOLOUT_MAX_CHUNKS_FOR_FULL_MODE", "3")
    monkeypatch.setenv("TOOLOUT_API_KEYS", '{"ab12": "acme"}')
    settings = Settings()
    assert settings.max_chunks_for_full_mode == 3 and settings.api_keys == {"ab12": "acme"}


def test_an_empty_api_base_means_the_providers_default(monkeypatch) -> None:
    monkeypatch.setenv("TOOLOUT_MODEL_API_BASE", "")
    monkeypatch.setenv("TOOLOUT_MODEL_API_KEY", "")
    settings = Settings()
    assert settings.model_api_base is None and settings.model_api_key is None


def test_timeouts_must_be_strictly_ordered() -> None:
    with pytest.raises(ValidationError, match="strictly ordered"):
        Settings(model_timeout_seconds=300, task_soft_time_limit_seconds=240)
    with pytest.raises(ValidationError, match="strictly ordered"):
        Settings(task_time_limit_seconds=3600, visibility_timeout_seconds=3600)


def test_overlap_is_capped_at_half() -> None:
    with pytest.raises(ValidationError):
        Settings(chunk_overlap=0.6)


def test_the_default_blob_store_is_the_users_data_dir_not_the_packages_folder(monkeypatch) -> None:
    """Installed, the package's parent is site-packages: nothing of a user's may default to live there."""
    from pathlib import Path

    from platformdirs import user_data_path

    import infra.settings

    monkeypatch.delenv("TOOLOUT_BLOB_STORE", raising=False)
    assert user_data_path("toolout", appauthor=False) == infra.settings.DATA_DIR
    assert Settings().blob_store == f"file://{infra.settings.DATA_DIR / 'blobs'}"
    package_parent = Path(infra.settings.__file__).resolve().parent.parent
    assert package_parent not in infra.settings.DATA_DIR.resolve().parents

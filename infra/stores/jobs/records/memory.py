"""Job records in process memory: the same promises as Redis, kept by the shared state's one lock."""

from __future__ import annotations

from typing import Any

from infra.stores.jobs.memory_state import MemoryJob, MemoryJobState, copy, with_fields
from infra.stores.jobs.model import JobRecord, JobStatus
from infra.stores.jobs.records.base import JobRecords, admitted, check_finished, too_many_requests


class MemoryJobRecords(JobRecords):
    """`JobRecords` in a dict; thread-safe within one process."""

    def __init__(self, state: MemoryJobState) -> None:
        self._s = state

    def create(self, record: JobRecord, *, max_live: int = 0) -> JobRecord:
        record = admitted(record, self._s.deadline)
        with self._s.lock:
            if max_live > 0 and self.count_live(record.tenant) >= max_live:
                raise too_many_requests(record.tenant, max_live)
            self._s.jobs[record.id] = MemoryJob(copy(record))
        return record

    def create_finished(self, record: JobRecord) -> JobRecord:
        check_finished(record)
        with self._s.lock:
            self._s.jobs[record.id] = MemoryJob(copy(record), expires_at=self._s.clock() + self._s.ttl)
        self.notify_finished(record.id)
        return record

    def count_live(self, tenant: str) -> int:
        with self._s.lock:
            return sum(1 for job in self._s.live() if job.record.tenant == tenant)

    def get(self, job_id: str, tenant: str | None = None) -> JobRecord:
        return self._s.read(job_id, tenant)

    def update(self, job_id: str, **fields: Any) -> bool:
        with self._s.lock:
            job = self._s.existing(job_id)
            if job.record.status.terminal:
                return False
            job.record = with_fields(job.record, fields)
            return True

    def finish(self, job_id: str, status: JobStatus, **fields: Any) -> bool:
        assert status.terminal, status
        with self._s.lock:
            job = self._s.existing(job_id)
            if job.record.status.terminal:
                return False
            job.record = with_fields(job.record, {"status": status, "finished_at": self._s.clock(), **fields})
            job.expires_at = self._s.clock() + self._s.ttl
        self.notify_finished(job_id)
        return True

    def is_terminal(self, job_id: str) -> bool:
        with self._s.lock:
            job = self._s.job(job_id)
            return job is None or job.record.status.terminal

    def list_for_session(self, session_id: str, tenant: str | None = None) -> list[JobRecord]:
        with self._s.lock:
            found = [job.record for job in self._s.present() if job.record.session_id == session_id]
        mine = [record for record in found if tenant is None or record.tenant == tenant]
        return [copy(record) for record in sorted(mine, key=lambda record: record.created_at)]

    def delete(self, job_ids: list[str]) -> None:
        with self._s.lock:
            for job_id in job_ids:
                self._s.jobs.pop(job_id, None)

    def delete_session_jobs(self, session_id: str) -> None:
        with self._s.lock:
            self.delete([job_id for job_id, job in self._s.jobs.items() if job.record.session_id == session_id])

"""A campaign's plan (its jobs and the members' order) and which of its units the files hold."""

from __future__ import annotations

from meta_eval.campaign.order import campaign_order
from meta_eval.campaign.spec import CampaignSpec
from meta_eval.measure import Job, plan_jobs
from meta_eval.population import Member


class CampaignLedger:
    def __init__(self, spec: CampaignSpec):
        self.spec, self.files, self.zoo = spec, spec.files, spec.zoo
        self.jobs = spec.plan(self.zoo) if spec.plan else plan_jobs(self.zoo, spec.keys, fluency=bool(self.zoo.base))
        self.order = spec.order(self.zoo) if spec.order else campaign_order(self.zoo)

    def settings_digest(self, setting: str) -> str:
        return self.spec.settings_digest(setting)

    def jobs_of(self, member: Member) -> list[Job]:
        return [j for j in self.jobs if j.member.name == member.name]

    # --- state from the files --------------------------------------------------------------
    def done(self, job: Job, fingerprint: str | None = None) -> bool:
        return self.files.valid_measurement(job.setting, job.member.name, self.spec.recipe_digest(job.member),
                                            self.settings_digest(job.setting), job.keys, fingerprint) is not None

    def member_done(self, member: Member) -> bool:
        return all(self.done(j) for j in self.jobs_of(member))

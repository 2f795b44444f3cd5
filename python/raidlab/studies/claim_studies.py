"""The claim studies raidlab reproduces, by name: the one registry of them.

Each study is defined in its own module (``claims`` holds the ADMIN article's and the
machinery, ``nvme_raid0`` the NVMe RAID 0 one); this module lists them, so a study is
known because it is named here, not because some module happened to import it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from raidlab.studies import claims
from raidlab.studies.claim_text import interpret
from raidlab.studies.claims import ClaimStudy
from raidlab.studies.nvme_raid0 import NVME_RAID0

if TYPE_CHECKING:
    import pandas as pd

CLAIM_STUDIES: dict[str, ClaimStudy] = {
    study.name: study
    for study in (
        # Its claims without a hand-written check are read from their text.
        dataclasses.replace(claims.SSD_RAID_TUNING, interpret=interpret),
        NVME_RAID0,
    )
}


def reproduce_claims(name: str, **options: Any) -> pd.DataFrame:
    """The claim study ``name`` reproduced; ``options`` and their defaults are
    ``raidlab.studies.claims.reproduce_claims``'s own (ios, seed, jobs, executor,
    progress, simulator, claims_file), not restated here."""
    return claims.reproduce_claims(CLAIM_STUDIES[name], **options)

"""A ticketing-style catalog as real APIs return it: events and performances in objects keyed by id."""

from __future__ import annotations

import json
from typing import Any

FIRST_EVENT = 138586341
EVENTS = 184
PERFORMANCES = 243


def ticket_catalog() -> dict[str, Any]:
    """184 events and 243 performances keyed by id, with names, nested prices and lookups keyed by id too."""
    events = {
        str(FIRST_EVENT + i): {
            "description": None if i % 3 else f"Season {i}",
            "id": FIRST_EVENT + i,
            "name": f"Concert {i * 7 % 1000:03d} {['Bach', 'Ravel', 'Satie', 'Glass'][i % 4]}",
            "subTopicIds": [337184269, 337184283 + i % 5],
            "topicIds": [324846099],
            **({"subjectCode": None} if i % 11 == 0 else {}),
        }
        for i in range(EVENTS)
    }
    performances = {
        str(339887000 + i): {
            "eventId": FIRST_EVENT + i % EVENTS,
            "id": 339887000 + i,
            "prices": [{"amount": 90_250 + i, "audienceSubCategoryId": 337100890, "seatCategoryId": 338937295}],
            "seatCategories": [{"areas": [{"areaId": 205705999, "blockIds": []}], "seatCategoryId": 338937295}],
            "start": 1_372_615_200_000 + i * 86_400_000,
            "venueCode": "PLEYEL_PLEYEL",
        }
        for i in range(PERFORMANCES)
    }
    names = {"205705999": "1er balcon central", "205705998": "1er balcon bergerie cour"}
    return {"areaNames": names, "events": events, "performances": performances, "venueNames": {"PLEYEL": "Salle"}}


def catalog_bytes() -> bytes:
    return json.dumps(ticket_catalog(), indent=1).encode()

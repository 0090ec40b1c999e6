"""The request and answer bodies of the service (pydantic models: the OpenAPI schema), and the
body of a 422 made from pydantic's errors."""

from __future__ import annotations

from typing import Any

from ..errors import require

require("fastapi", "service")

from pydantic import BaseModel, ConfigDict, Field, model_validator  # noqa: E402

from .settings import MAX_ID_LENGTH  # noqa: E402

__all__ = ["DocumentIn", "RequestBody", "Near", "Contained", "Neighbour", "Answer", "Added", "Results", "Removed",
           "Error", "ERRORS", "validation_answer"]


# -- schemas ---------------------------------------------------------------------------------

URL_FIELD = ("the page's URL: its canonical form (neardup.urls, under the rules recorded in the index) is "
             "stored with the document, and answers say whether it was seen (url_seen, url_match)")

class DocumentIn(BaseModel):
    """One document: ``text`` or ``html`` (exactly one), an optional id, URL and metadata."""

    # The schema says what the validator checks (schemathesis sends what the schema allows): the
    # content given is a string, the other one is absent or null.
    model_config = ConfigDict(extra="forbid", json_schema_extra={"oneOf": [
        {"required": ["text"], "properties": {"text": {"type": "string"}, "html": {"type": "null"}}},
        {"required": ["html"], "properties": {"html": {"type": "string"}, "text": {"type": "null"}}}]})

    id: str | None = Field(default=None, min_length=1, max_length=MAX_ID_LENGTH,
                           description="the document's id (a URL, a key); default: its content fingerprint")
    text: str | None = Field(default=None, description="plain text")
    html: str | None = Field(default=None, description="an HTML page; its main content is indexed")
    meta: dict[str, Any] | None = Field(default=None, description="stored with the document (add only)")
    url: str | None = Field(default=None, min_length=1, max_length=MAX_ID_LENGTH, description=URL_FIELD)

    @model_validator(mode="after")
    def _one_content(self):
        if (self.text is None) == (self.html is None):
            raise ValueError("give exactly one of 'text' and 'html'")
        return self


class RequestBody(BaseModel):
    """A document (``id``, ``text`` or ``html``, ``meta``) or a batch (``documents``)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"oneOf": [
        {"required": ["text"], "properties": {"text": {"type": "string"}, "html": {"type": "null"},
                                              "documents": {"type": "null"}}},
        {"required": ["html"], "properties": {"html": {"type": "string"}, "text": {"type": "null"},
                                              "documents": {"type": "null"}}},
        {"required": ["documents"], "properties": {"documents": {"type": "array"}, **{
            name: {"type": "null"} for name in ("id", "text", "html", "meta", "url")}}}]})

    id: str | None = Field(default=None, min_length=1, max_length=MAX_ID_LENGTH)
    text: str | None = None
    html: str | None = None
    meta: dict[str, Any] | None = None
    url: str | None = Field(default=None, min_length=1, max_length=MAX_ID_LENGTH, description=URL_FIELD)
    documents: list[DocumentIn] | None = Field(default=None, min_length=1,
                                               description="a batch, answered as {\"results\": [...]} in order")

    @model_validator(mode="after")
    def _one_form(self):
        single = [name for name in ("id", "text", "html", "meta", "url") if getattr(self, name) is not None]
        if self.documents is not None:
            if single:
                raise ValueError(f"give either 'documents' or one document, not both (also got {', '.join(single)})")
            return self
        if (self.text is None) == (self.html is None):
            raise ValueError("give exactly one of 'text' and 'html' (or a batch in 'documents')")
        return self


class Near(BaseModel):
    id: str
    jaccard: float
    exact_jaccard: float | None = None


class Contained(BaseModel):
    id: str
    containment: float
    exact_containment: float | None = None


class Neighbour(BaseModel):
    id: str
    distance: int


class Answer(BaseModel):
    id: str | None
    exact: list[str]
    near: list[Near]
    contains: list[Contained]
    contained_in: list[Contained]
    simhash: list[Neighbour]
    url_seen: bool | None = Field(default=None, description=(
        "only when the document gave a url: whether a stored document has the same canonical URL (null: the "
        "index stores no URLs, made before schema 7)"))
    url_match: str | None = Field(default=None, description=(
        "only when the document gave a url: the id of the first stored document with its canonical URL, or null"))
    added: bool | None = Field(default=None, description="check-and-add only")


class Added(BaseModel):
    id: str
    added: bool


class Results(BaseModel):
    results: list[dict[str, Any]]


class Removed(BaseModel):
    id: str
    removed: bool


class Error(BaseModel):
    error: str
    detail: list[dict[str, Any]] | None = None


ERRORS = {status: {"model": Error, "description": text} for status, text in {
    400: "a document the index cannot take", 401: "missing or wrong bearer token",
    408: "the request body did not arrive in time",
    413: "request body too large, or a document over its budget (characters, also after NFKC, or tokens)",
    415: "the body is not sent as application/json",
    422: "malformed JSON or a body of the wrong shape, or a batch of more than max_batch documents",
    503: "the index is busy (another writer), or the request went over its time budget"}.items()}



def validation_answer(errors) -> dict:
    """The 422 body for pydantic's errors (locations starting with "body")."""
    detail = [_clean(e) for e in errors]
    if len(detail) == 1 and detail[0]["loc"] == ["body"] and detail[0]["type"] == "model_attributes_type":
        return {"error": "the body must be a JSON object: {\"text\": ...}, {\"html\": ...} or "
                         "{\"documents\": [...]}", "detail": detail}
    summary = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in detail[:5])
    return {"error": f"invalid request: {summary}", "detail": detail}



def _clean(error: dict) -> dict:
    """A validation error without the echoed input or exception objects (JSON-safe, short)."""
    out = {"loc": [p if isinstance(p, (str, int)) else str(p) for p in error.get("loc", ())],
           "msg": str(error.get("msg", "")), "type": str(error.get("type", ""))}
    return out

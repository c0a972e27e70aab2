-- sessions.client is the JSON of a session's title and client conversation
-- (hippocam.Transcript.Client), '' when unknown: what a listing shows and groups sessions by,
-- without reading the transcript column, which holds the whole framing.
ALTER TABLE sessions ADD COLUMN client TEXT NOT NULL DEFAULT '';

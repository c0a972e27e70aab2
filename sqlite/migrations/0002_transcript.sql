-- Sessions keep the transcript fingerprint (hippocam.Transcript) as JSON, like the other
-- snapshot fields. Sessions created before this migration read back a zero Transcript.
ALTER TABLE sessions ADD COLUMN transcript TEXT NOT NULL DEFAULT '{}';

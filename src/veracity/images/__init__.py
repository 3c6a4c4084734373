"""Images: safe loading, EXIF metadata, a local image collection (image and reverse search), geolocation."""

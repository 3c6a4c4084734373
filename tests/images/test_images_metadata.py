"""Reading EXIF and PNG metadata: dates, GPS, camera, editing software; never raising on bad metadata."""

import io
import random

import pytest
from PIL import ExifTags, Image, PngImagePlugin

from veracity.image_files import ImageError, image_from_bytes
from veracity.images.metadata import read_metadata

NO_EXIF = "no exif metadata (often stripped by social media; absence proves nothing)"


def jpeg_with_exif(
    *,
    make="Canon",
    model="Canon EOS 5D Mark IV",
    software=None,
    taken="2020:01:02 03:04:05",
    modified=None,
    gps=((33.0, 51.0, 54.0), "S", (151.0, 12.0, 36.0), "E"),
) -> bytes:
    exif = Image.Exif()
    for tag, value in (
        (ExifTags.Base.Make, make),
        (ExifTags.Base.Model, model),
        (ExifTags.Base.Software, software),
        (ExifTags.Base.DateTime, modified),
    ):
        if value is not None:
            exif[tag] = value
    if taken is not None:
        exif.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.DateTimeOriginal] = taken
    if gps is not None:
        g = exif.get_ifd(ExifTags.IFD.GPSInfo)
        g[ExifTags.GPS.GPSLatitude], g[ExifTags.GPS.GPSLatitudeRef] = gps[0], gps[1]
        g[ExifTags.GPS.GPSLongitude], g[ExifTags.GPS.GPSLongitudeRef] = gps[2], gps[3]
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), "navy").save(buf, "JPEG", exif=exif)
    return buf.getvalue()


def metadata_of(data: bytes, name="photo.jpg"):
    return read_metadata(image_from_bytes(data, name))


def test_camera_photo_with_gps():
    m = metadata_of(jpeg_with_exif(modified="2020:01:02 03:04:05"))
    assert m.taken == "2020-01-02T03:04:05"
    assert m.gps == pytest.approx((-33.865, 151.21))
    assert m.camera == "Canon EOS 5D Mark IV"  # the make is not repeated
    assert (m.width, m.height, m.format) == (40, 30, "JPEG")
    assert m.software is None and not m.edited and m.has_exif
    text = m.describe()
    assert "Taken: 2020-01-02T03:04:05" in text
    assert "-33.865000, 151.210000" in text
    assert "Camera: Canon EOS 5D Mark IV" in text
    assert "No sign of editing" in text and NO_EXIF not in text.lower()


def test_north_west_coordinates_and_make_plus_model():
    m = metadata_of(
        jpeg_with_exif(make="NIKON CORPORATION", model="D750", gps=((40.0, 42.0, 46.08), "N", (74.0, 0.0, 21.6), "W"))
    )
    assert m.gps == pytest.approx((40.7128, -74.006))
    assert m.camera == "NIKON CORPORATION D750"


def test_editor_software_and_a_later_file_date_mean_edited():
    m = metadata_of(jpeg_with_exif(software="Adobe Photoshop 24.0 (Windows)", modified="2023:06:07 08:09:10"))
    assert m.software == "Adobe Photoshop 24.0 (Windows)"
    assert m.edited
    assert m.taken == "2020-01-02T03:04:05" and m.modified == "2023-06-07T08:09:10"
    assert len(m.edit_signs) == 2
    text = m.describe()
    assert "Software: Adobe Photoshop 24.0 (Windows)" in text
    assert "Signs of editing:" in text and "image editor" in text and "2023-06-07T08:09:10" in text


@pytest.mark.parametrize(
    "software,edited",
    [
        ("GIMP 2.10.34", True),
        ("Snapseed 2.0", True),
        ("Canva", True),
        ("PicsArt Photo Studio", True),
        ("Adobe Lightroom 7", True),
        ("HDR+ 1.0.540104767zd", False),
        ("iOS 17.1", False),
    ],
)
def test_which_software_counts_as_an_editor(software, edited):
    assert metadata_of(jpeg_with_exif(software=software, gps=None)).edited is edited


def test_date_time_alone_is_the_capture_date():
    m = metadata_of(jpeg_with_exif(taken=None, modified="2019:12:31 23:59:59", gps=None))
    assert m.taken == "2019-12-31T23:59:59" and not m.edited


@pytest.mark.parametrize("value", ["0000:00:00 00:00:00", "    :  :     :  :  ", "2020:13:45 99:00:00", "soon"])
def test_blank_or_invalid_dates_are_ignored(value):
    assert metadata_of(jpeg_with_exif(taken=value, gps=None)).taken is None


def test_image_without_exif():
    buf = io.BytesIO()
    Image.new("RGB", (20, 10), "white").save(buf, "PNG")
    m = metadata_of(buf.getvalue(), "plain.png")
    assert not m.has_exif and m.taken is None and m.gps is None and m.camera is None and not m.edited
    assert NO_EXIF in m.describe().lower()
    assert m.describe().startswith("PNG image, 20x10 pixels.")


def test_png_software_text_chunk():
    info = PngImagePlugin.PngInfo()
    info.add_text("Software", "GIMP 2.10")
    buf = io.BytesIO()
    Image.new("RGB", (20, 10), "white").save(buf, "PNG", pnginfo=info)
    m = metadata_of(buf.getvalue(), "edited.png")
    assert m.software == "GIMP 2.10" and m.edited


@pytest.mark.parametrize("lat", [(95.0, 0.0, 0.0), (1.0, 2.0, 3.0, 4.0)])
def test_impossible_gps_values_are_ignored(lat):
    m = metadata_of(jpeg_with_exif(gps=(lat, "N", (151.0, 12.0, 36.0), "E")))
    assert m.gps is None and m.camera == "Canon EOS 5D Mark IV"


def test_malformed_exif_is_reported_not_raised():
    # A TIFF header whose single tag points far past the end of the data.
    bad = b"Exif\x00\x00MM\x00\x2a\x00\x00\x00\x08\x00\x01\x01\x0f\x00\x02\xff\xff\xff\xff\x00\x00\x00\x10"
    buf = io.BytesIO()
    Image.new("RGB", (20, 10), "white").save(buf, "JPEG", exif=bad)
    m = metadata_of(buf.getvalue())
    assert m.problem and "malformed" in m.describe()
    assert m.camera is None


def test_random_damage_to_the_exif_segment_never_raises():
    data = jpeg_with_exif(software="Adobe Photoshop", modified="2021:01:01 00:00:00")
    start = data.index(b"Exif\x00\x00") + 6
    end = start + 200
    rng = random.Random(7)
    checked = 0
    for _ in range(60):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 12)):
            damaged[rng.randrange(start, end)] = rng.randrange(256)
        try:
            image = image_from_bytes(bytes(damaged), "damaged.jpg")
        except ImageError:
            continue
        m = read_metadata(image)  # must not raise
        assert isinstance(m.describe(), str)
        checked += 1
    assert checked > 30
